"""What one agent call returns, and the string type that remembers who wrote it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from swarmflow.core.messages import Usage
from swarmflow.core.patch import Patch


class SourcedStr(str):
    """A `str` that carries the agents it came from. Slicing or formatting drops the
    attribute, which is why the run also fingerprints agent outputs."""

    __swarmflow_provenance__: frozenset[str]

    def __new__(cls, value: str, provenance: frozenset[str]) -> SourcedStr:
        obj = super().__new__(cls, value)
        obj.__swarmflow_provenance__ = provenance
        return obj

    def __reduce__(self) -> tuple[Any, ...]:
        return (SourcedStr, (str(self), self.__swarmflow_provenance__))


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
        return self.text

    def __swarmflow_empty__(self) -> bool:
        if self.patch is not None:
            return self.patch.empty
        return self.value is None and not self.text.strip()
