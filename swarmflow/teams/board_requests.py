"""What a request to the board over HTTP may carry: one typed model per endpoint.

Every body and query string is validated here before anything reaches the board: the type of
each field, the numbers' ranges (finite, in bounds), the sizes of strings and lists, and no
field the endpoint does not define. A body is parsed by pydantic's own JSON parser, so text that
is not JSON, a lone surrogate, a number too large for a float or nesting too deep is one
`BadRequest` too, never an exception of the server. A `BadRequest` names the field and says
what is wrong in one line (the server answers it with 400).

The board's own rules (an unknown agent or thread, an edge, an empty message, invisible
characters in a thread name) stay the board's: they are refusals (403), recorded as a tool
call's are. The limits here are the board's where the two coincide (`board_rules`).
"""

from __future__ import annotations

import json
from typing import Annotated, TypeVar
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from swarmflow.teams.board_rules import MAX_CONTENT, MAX_MENTIONS, MAX_WAIT

MAX_NAME = 200
"""Characters in an agent, thread or board name as sent (the board's own rules are finer)."""
DEFAULT_WAIT = 60.0
"""Seconds `POST /wait` waits when the body gives no timeout."""
_SHOWN = 120

Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME)]
Names = Annotated[list[Name], Field(max_length=MAX_MENTIONS)]


class BadRequest(Exception):
    """A request the server answers with 400: `field` is what is wrong, `error` says how."""

    def __init__(self, field: str, error: str) -> None:
        super().__init__(error)
        self.field, self.error = field, error


class _Request(BaseModel):
    """What every request names: the agent it acts as, and the board (None: the default)."""

    # strict: "5" is no number and 1 is no name; forbid: a misspelt field is an error.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    agent: Name = Field(alias="as")
    """The declared agent the request acts as."""
    board: Annotated[str, StringConstraints(max_length=MAX_NAME)] | None = None
    """The board: "" the run's own, `team[0]` a team call's; None the default one."""


class ThreadRequest(_Request):
    """`POST /threads`: open a thread."""

    name: Name
    participants: Names = []


class MessageRequest(_Request):
    """`POST /messages`: post to a thread."""

    thread: Name
    content: Annotated[str, StringConstraints(max_length=MAX_CONTENT)]
    mentions: Names = []


class WaitRequest(_Request):
    """`POST /wait`: wait for a mention."""

    timeout: float = Field(default=DEFAULT_WAIT, ge=0, le=MAX_WAIT, allow_inf_nan=False)
    """Seconds, 0 to `MAX_WAIT`: a number, never text, null or a boolean."""


class BoardQuery(_Request):
    """`GET /board?as=AGENT[&board=NAME]`: the threads an agent takes part in."""


R = TypeVar("R", bound=_Request)


def parse_body(model: type[R], raw: bytes) -> R:
    """The body of a POST as `model`.

    Raises:
        BadRequest: not a JSON object, or a field missing, mistyped, out of range or unknown.
    """
    try:
        return model.model_validate_json(raw or b"null")
    except ValidationError as error:
        raise _bad(model, error) from None


def parse_query(model: type[R], query: str) -> R:
    """A GET's query string as `model`; each field given once, as UTF-8.

    Raises:
        BadRequest: as `parse_body`, or a field given twice, or a query that does not parse.
    """
    try:
        fields = parse_qs(
            query, keep_blank_values=True, strict_parsing=bool(query), errors="strict"
        )
    except (ValueError, UnicodeDecodeError) as exc:  # a UnicodeDecodeError is a ValueError
        raise BadRequest("query", f"the query string does not parse: {exc}") from None
    twice = [name for name, values in fields.items() if len(values) > 1]
    if twice:
        raise BadRequest(twice[0], f"{_shown(twice[0])} is given more than once")
    try:
        return model.model_validate({name: values[0] for name, values in fields.items()})
    except ValidationError as error:
        raise _bad(model, error) from None


def _bad(model: type[_Request], error: ValidationError) -> BadRequest:
    """The first thing wrong, as one line naming its field."""
    first = error.errors(include_url=False, include_context=False)[0]
    kind, where = first["type"], first["loc"]
    field = ".".join(str(part) for part in where)
    if kind == "json_invalid":
        why = str(first["msg"]).removeprefix("Invalid JSON: ")
        return BadRequest("body", f"the body is not JSON: {why}")
    if not where:
        return BadRequest("body", "the body must be a JSON object")
    if kind == "missing":
        return BadRequest(field, f"the request needs {_shown(field)}")
    if kind == "extra_forbidden":
        known = ", ".join(_fields(model))
        return BadRequest(field, f"{_shown(field)} is not a field of this request ({known})")
    return BadRequest(field, f"{_shown(field)}: {first['msg']} (got {_value(first['input'])})")


def _fields(model: type[_Request]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else f"{text[:_SHOWN]}...")


def _value(value: object) -> str:
    """A bad value as the error shows it: a container by its kind, a string quoted and cut
    short, anything else as JSON writes it."""
    if isinstance(value, dict | list):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    if isinstance(value, str):
        return _shown(value)
    return json.dumps(value)[:_SHOWN]
