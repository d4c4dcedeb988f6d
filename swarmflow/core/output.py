"""What one agent call returns, and the string type that remembers who wrote it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swarmflow.core.messages import Usage
from swarmflow.core.patch import Patch
from swarmflow.core.renders import note_render


class SourcedStr(str):
    """A `str` that carries the agents it came from.

    Concatenation (`+`) and `%` with this string as the template give a `SourcedStr` again.
    An f-string, `str.format`, `%` as an argument, `str()` and `repr()` build a plain `str`:
    those pass through the hooks below, which note the rendered piece in the run's
    `RenderLog` (`core.renders`). Slicing, `join` and the other methods drop the attribute;
    the fingerprints (`core.fingerprint`) are the net there.
    """

    __swarmflow_provenance__: frozenset[str]

    def __new__(cls, value: str, provenance: frozenset[str]) -> SourcedStr:
        obj = super().__new__(cls, value)
        obj.__swarmflow_provenance__ = provenance
        return obj

    def __reduce__(self) -> tuple[object, ...]:
        return (SourcedStr, (str.__str__(self), self.__swarmflow_provenance__))

    def __format__(self, spec: str) -> str:
        piece = str.__format__(self, spec)
        note_render(piece, self.__swarmflow_provenance__)
        return piece

    def __str__(self) -> str:
        note_render(self, self.__swarmflow_provenance__)
        return str.__str__(self)

    def __repr__(self) -> str:
        piece = str.__repr__(self)
        note_render(piece, self.__swarmflow_provenance__)
        return piece

    def __add__(self, other: str) -> str:
        if not isinstance(other, str):
            return NotImplemented
        joined = str.__add__(self, other)
        return SourcedStr(joined, self.__swarmflow_provenance__ | _sources_of(other))

    def __radd__(self, other: str) -> str:
        if not isinstance(other, str):
            return NotImplemented
        joined = str.__add__(other, self)
        return SourcedStr(joined, self.__swarmflow_provenance__ | _sources_of(other))

    def __mod__(self, args: object) -> str:
        return SourcedStr(str.__mod__(self, args), self.__swarmflow_provenance__)


def _sources_of(value: object) -> frozenset[str]:
    found: frozenset[str] = getattr(value, "__swarmflow_provenance__", frozenset())
    return found


@dataclass(frozen=True, slots=True)
class AgentOutput:
    """The result of one agent call."""

    agent: str
    session: str
    text: str
    value: Any = None
    patch: Patch | None = None
    usage: Usage = Usage()
    state: str = "done"
    reason: str = "completed"
    provenance: frozenset[str] = frozenset()
    detail: str = ""

    @property
    def __swarmflow_provenance__(self) -> frozenset[str]:
        return self.provenance

    @property
    def ok(self) -> bool:
        return self.state == "done"

    def __str__(self) -> str:
        note_render(self.text, self.provenance)
        return str.__str__(self.text)

    def __format__(self, spec: str) -> str:
        piece = format(str.__str__(self.text), spec)
        note_render(piece, self.provenance)
        return piece

    def __swarmflow_empty__(self) -> bool:
        if self.patch is not None:
            return self.patch.empty
        return self.value is None and not self.text.strip()
