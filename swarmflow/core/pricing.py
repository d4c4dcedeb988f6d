"""USD prices per million tokens, per model; users override or extend the table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from swarmflow.core.messages import Usage


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million input, cached-input and output tokens."""

    input: float
    cached_input: float
    output: float

    def cost(self, usage: Usage) -> float:
        return self.cost_of(usage.input, usage.output, usage.cached_input)

    def cost_of(self, input_tokens: int, output_tokens: int, cached: int = 0) -> float:
        """USD for token counts, without building a `Usage` (the reservation's estimate)."""
        fresh = max(input_tokens - cached, 0)
        return (
            fresh * self.input + cached * self.cached_input + output_tokens * self.output
        ) / 1_000_000


FREE = Price(0.0, 0.0, 0.0)

DEFAULT_PRICES: Mapping[str, Price] = {
    "gpt-4o": Price(2.50, 1.25, 10.00),
    "gpt-4o-mini": Price(0.15, 0.075, 0.60),
    "gpt-4.1": Price(2.00, 0.50, 8.00),
    "gpt-4.1-mini": Price(0.40, 0.10, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.025, 0.40),
    "o3": Price(2.00, 0.50, 8.00),
    "o4-mini": Price(1.10, 0.275, 4.40),
    "gpt-5": Price(1.25, 0.125, 10.00),
    "gpt-5-mini": Price(0.25, 0.025, 2.00),
    "gpt-5-nano": Price(0.05, 0.005, 0.40),
}


class PriceTable:
    """Looks up a model's price: exact name, then the longest known prefix, else free.

    Local servers (vLLM, Ollama, llama.cpp) serve models that cost nothing per token, so an
    unknown model is priced at zero rather than refused.
    """

    def __init__(self, overrides: Mapping[str, Price | Mapping[str, float]] | None = None) -> None:
        self._prices: dict[str, Price] = dict(DEFAULT_PRICES)
        self._resolved: dict[str, Price] = {}
        for name, price in (overrides or {}).items():
            self._prices[name] = price if isinstance(price, Price) else Price(**price)

    def price(self, model: str | None) -> Price:
        if not model:
            return FREE
        found = self._resolved.get(model)
        if found is None:
            found = self._lookup(model)
            self._resolved[model] = found
        return found

    def _lookup(self, model: str) -> Price:
        if model in self._prices:
            return self._prices[model]
        matches = [name for name in self._prices if model.startswith(name)]
        return self._prices[max(matches, key=len)] if matches else FREE

    def cost(self, model: str | None, usage: Usage) -> float:
        return self.price(model).cost(usage)
