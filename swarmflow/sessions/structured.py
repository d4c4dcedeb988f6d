"""Structured answers: ask for JSON matching a pydantic model, validate, re-ask on failure.

The model calls of a structured turn carry the output's JSON schema on the request
(`ModelRequest.output`), so an adapter whose server can constrain decoding to a schema does
so (the server's JSON-schema mode). The answer is validated here in every mode, and the
schema is stated in the prompt too: a server that ignores the mode, or an adapter that falls
back to prompting, still gets a well-asked question.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from pydantic import BaseModel, ValidationError

from swarmflow.core.bindings import bound
from swarmflow.core.errors import AgentFailed
from swarmflow.core.messages import OutputSpec
from swarmflow.core.states import EndReason, SessionState
from swarmflow.sessions.requests import Asking, asking
from swarmflow.sessions.session import AgentSession

ASK_RETRIES = 3

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """What a structured call sends for its output type, built once per type."""

    spec: OutputSpec
    """The name and JSON schema its requests carry (shared by them all: read, never change)."""
    prompt: str
    """The schema as the prompt states it."""
    canonical: str
    """The schema with sorted keys: the journal digests it into the call's key."""
    validator: object
    """The type's validator when this was built: `model_rebuild()` replaces it, and then the
    schema may have changed too."""


_SCHEMAS: WeakKeyDictionary[type[BaseModel], OutputSchema] = WeakKeyDictionary()
"""By output type: pydantic builds a JSON schema afresh on every `model_json_schema()`, at
hundreds of microseconds for a small model, and a structured call needs it twice."""


def output_schema(output: type[BaseModel]) -> OutputSchema:
    """The request spec and the texts of `output`'s JSON schema."""
    found = _SCHEMAS.get(output)
    if found is None or found.validator is not output.__pydantic_validator__:
        schema = output.model_json_schema()
        found = _SCHEMAS[output] = OutputSchema(
            OutputSpec(output.__name__, schema),
            json.dumps(schema),
            json.dumps(schema, sort_keys=True),
            output.__pydantic_validator__,
        )
    return found


async def ask_structured(
    session: AgentSession, prompt: str, output: type[BaseModel], retries: int = ASK_RETRIES
) -> BaseModel | None:
    """Ask for a JSON answer matching `output`; re-ask with the validation error, bounded.

    The caller holds the session's `turn_lock` (or owns the session alone), so that a re-ask
    follows its own question and no other sender's turn comes between them.
    """
    schema = output_schema(output)
    with bound(asking, Asking(session, schema.spec)):
        return await _ask_until_valid(session, prompt, output, schema, retries)


async def _ask_until_valid(
    session: AgentSession, prompt: str, output: type[BaseModel], schema: OutputSchema, retries: int
) -> BaseModel | None:
    text = f"{prompt}\n\nAnswer with one JSON object that matches this JSON schema:\n"
    text += schema.prompt
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


async def take_turn(
    session: AgentSession, text: str, output: type[BaseModel] | None
) -> BaseModel | None:
    """One turn of a kept session: a plain answer, or one validated as `output`.

    The run's `take_turn` when it keeps no journal (`durable.replay.journaled_turn` wraps it
    otherwise). The caller holds the session's `turn_lock`.
    """
    if output is None:
        await session.turn_unlocked(text)
        return None
    return await ask_structured(session, text, output)
