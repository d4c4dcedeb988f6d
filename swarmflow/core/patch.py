"""A candidate's change to a repository, as a typed value."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Patch:
    """A unified diff of a workspace against its base commit."""

    diff: str
    base: str = ""
    commit: str = ""
    branch: str = ""
    files: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        return not self.diff.strip()

    def __swarmflow_empty__(self) -> bool:
        return self.empty

    def __bool__(self) -> bool:
        return not self.empty
