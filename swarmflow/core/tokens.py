"""The one token estimator: text measured in units, units priced per model from settled usage.

A unit is one character of ASCII text; every UTF-8 byte past a character's first adds one and
a half units. So before anything is learned, English costs a third of a token a character
(byte-pair tokenizers average nearer a quarter), a Cyrillic or Greek letter about 0.8 of a
token, and a CJK character 1.33 tokens (tokenizers spend 0.7 to 1.5 on one): non-Latin
scripts are counted conservatively from the start.

After each settled call the estimator learns the model's observed tokens per unit, so the
next estimate for that model tracks its real tokenizer; it keeps the largest rate of the
last few calls, so it errs high when the text changes character.

It learns, too, how much each agent writes: a call is expected to write as much as the most
of its agent's last few calls (never less than a floor), and the budget reserves the prompt
estimate plus that expected output (`swarmflow.core.budget.reserve_call`, which also caps the
call's output; the overshoot bound is stated there and in docs/architecture.md).
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Iterable, Sequence

from swarmflow.core.messages import Message, ToolSpec

PRIOR_TOKENS_PER_UNIT = 1 / 3
"""Tokens per unit before a model's first settled call."""
MESSAGE_UNITS = 12
"""Chat-template overhead of one message or one tool call (about 4 tokens at the prior)."""
TOOL_SPEC_UNITS = 24
"""Overhead of one tool schema in the request (about 8 tokens at the prior)."""
LEARNED_WINDOW = 8
"""How many recent calls' rates a model's estimate keeps (it uses the largest)."""
EXPECTED_OUTPUT_PRIOR = 1024
"""Output tokens a call is expected to write before its agent's first settled call: a long
answer, yet a quarter of the default `max_output_tokens`, so a modest budget holds several
calls in flight at once."""
EXPECTED_OUTPUT_FLOOR = 256
"""The least output a call is expected to write however short its agent's recent answers (a
tool call's arguments, a short reply), so a later, longer answer is not much underestimated.
It is also the least room for output with which a call is sent at all."""


def text_units(text: str | None) -> int:
    """The size of `text` in estimator units (ASCII characters count one each)."""
    if not text:
        return 0
    if text.isascii():
        return len(text)
    extra_bytes = len(text.encode("utf-8", "surrogatepass")) - len(text)
    return len(text) + (3 * extra_bytes + 1) // 2


def message_units(message: Message) -> int:
    """One message's units: its text, its tool calls and the template around each."""
    total = MESSAGE_UNITS + text_units(message.content)
    for call in message.tool_calls:
        total += MESSAGE_UNITS + text_units(call.name) + text_units(call.arguments)
    return total


def spec_units(spec: ToolSpec) -> int:
    """One tool schema's units as it is sent (name, description, JSON schema)."""
    schema = json.dumps(spec.parameters, separators=(",", ":"), ensure_ascii=False)
    return (
        TOOL_SPEC_UNITS + text_units(spec.name) + text_units(spec.description) + text_units(schema)
    )


def prompt_units(messages: Iterable[Message], tools: Sequence[ToolSpec] = ()) -> int:
    """The whole request's units: every message and every tool schema."""
    return sum(message_units(m) for m in messages) + sum(spec_units(s) for s in tools)


def units_to_tokens(units: int, rate: float = PRIOR_TOKENS_PER_UNIT) -> int:
    """Tokens for `units` at `rate`, rounded up (an estimate for budgeting errs high)."""
    return math.ceil(units * rate) if units > 0 else 0


def estimate_tokens(text: str | None) -> int:
    """Tokens of `text` at the prior rate (for adapters that must guess unreported usage)."""
    return units_to_tokens(text_units(text))


def estimate_prompt(messages: Iterable[Message], tools: Sequence[ToolSpec] = ()) -> int:
    """Prompt tokens of a request at the prior rate."""
    return units_to_tokens(prompt_units(messages, tools))


class TokenEstimator:
    """Per-model tokens per unit and per-agent output, learned from settled calls (one per run)."""

    __slots__ = ("_expected", "_observed", "_outputs", "_rates")

    def __init__(self) -> None:
        self._observed: dict[str, deque[float]] = {}
        self._rates: dict[str, float] = {}
        """The largest rate in each model's window, kept as it is learned: read twice a call."""
        self._outputs: dict[str, deque[int]] = {}
        self._expected: dict[str, int] = {}
        """Each agent's expected output, kept as it is learned (read once a call)."""

    def rate(self, model: str | None) -> float:
        """The tokens per unit used for `model`'s next estimate."""
        return self._rates.get(model or "", PRIOR_TOKENS_PER_UNIT)

    def tokens(self, units: int, model: str | None) -> int:
        """Estimated tokens of a prompt of `units` for `model`."""
        return units_to_tokens(units, self.rate(model))

    def learn(self, model: str | None, units: int, prompt_tokens: int) -> None:
        """Record a settled call: a prompt of `units` that the server counted as `prompt_tokens`.

        Calls whose server reported no prompt tokens teach nothing.
        """
        if units <= 0 or prompt_tokens <= 0:
            return
        key = model or ""
        seen = self._observed.get(key)
        if seen is None:
            seen = self._observed[key] = deque(maxlen=LEARNED_WINDOW)
        seen.append(prompt_tokens / units)
        self._rates[key] = max(seen)

    def expected_output(self, agent: str) -> int:
        """Output tokens `agent`'s next call is expected to write: the most that any of its
        last few calls wrote, at least `EXPECTED_OUTPUT_FLOOR`; the prior before its first."""
        return self._expected.get(agent, EXPECTED_OUTPUT_PRIOR)

    def learn_output(self, agent: str, output_tokens: int) -> None:
        """Record what a settled call of `agent` wrote (a call cut at its cap wrote the cap)."""
        seen = self._outputs.get(agent)
        if seen is None:
            seen = self._outputs[agent] = deque(maxlen=LEARNED_WINDOW)
        seen.append(output_tokens)
        self._expected[agent] = max(EXPECTED_OUTPUT_FLOOR, *seen)
