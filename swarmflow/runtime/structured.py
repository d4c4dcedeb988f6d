"""Structured answers: ask for JSON matching a pydantic model, validate, re-ask on failure."""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ValidationError

from swarmflow.core.errors import AgentFailed
from swarmflow.core.states import EndReason, SessionState
from swarmflow.runtime.session import AgentSession

ASK_RETRIES = 3

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


async def ask_structured(
    session: AgentSession, prompt: str, output: type[BaseModel], retries: int = ASK_RETRIES
) -> BaseModel | None:
    """Ask for a JSON answer matching `output`; re-ask with the validation error, bounded.

    The caller holds the session's `turn_lock` (or owns the session alone), so that a re-ask
    follows its own question and no other sender's turn comes between them.
    """
    schema = json.dumps(output.model_json_schema())
    text = f"{prompt}\n\nAnswer with one JSON object that matches this JSON schema:\n{schema}"
    for _attempt in range(retries):
        answer = await session.turn_unlocked(text)
        if session.state is not SessionState.DONE:
            return None
        try:
            return parse_structured(answer, output)
        except ValueError as exc:
            text = f"That answer was not valid: {exc}\nAnswer again with only the JSON object."
    raise AgentFailed(
        f"agent {session.agent.name!r} gave no valid {output.__name__} in {retries} attempts",
        reason=EndReason.ERROR.value,
        agent=session.agent.name,
        session=session.id,
    )


def parse_structured(text: str, output: type[BaseModel]) -> BaseModel:
    """Validate the JSON object in `text` (bare, fenced, or embedded) against `output`."""
    errors = []
    for candidate in _json_candidates(text):
        try:
            return output.model_validate_json(candidate)
        except ValidationError as exc:
            errors.append(_summarise(exc))
    detail = errors[0] if errors else "no JSON object found in the answer"
    raise ValueError(detail)


def _json_candidates(text: str) -> list[str]:
    out = [text.strip()]
    out.extend(m.group(1).strip() for m in _FENCE.finditer(text))
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        out.append(text[start : end + 1])
    return [c for c in dict.fromkeys(out) if c]


def _summarise(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()
    )
