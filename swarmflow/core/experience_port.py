"""What a run's sessions read experience notes from, and what they hand their trajectories
to for reflection at the run's end (`swarmflow.experience` holds the store and reflector)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from swarmflow.core.messages import Message


@dataclass(frozen=True, slots=True)
class NewNote:
    """One experience note, what worked or failed, with the task and repository it came from,
    before it is stored (the store gives it its id and time)."""

    agent: str
    kind: str
    """"worked", "failed" or "note"."""
    text: str
    task: str
    repository: str
    run_id: str


@dataclass(frozen=True, slots=True)
class Note(NewNote):
    """One stored experience note."""

    id: int
    created: float
    """When it was written (seconds since the epoch)."""

    def brief(self) -> dict[str, str | int]:
        """The note as an event records it."""
        return {"id": self.id, "kind": self.kind, "text": self.text[:400], "run": self.run_id}


class Trajectory(Protocol):
    """A session as the reflector reads it at the run's end."""

    @property
    def history(self) -> list[Message]: ...

    @property
    def detail(self) -> str: ...


@dataclass(frozen=True, slots=True)
class RecordedTrajectory:
    """A session's trajectory as the journal keeps it for a resumed run's reflection: its
    history in brief (`ExperiencePort.brief`) and how it ended."""

    history: list[Message]
    detail: str = ""


class ExperiencePort(Protocol):
    """A run's experience: the notes offered to its sessions, the sessions to reflect on."""

    def offered(self, agent: str, task: str) -> Sequence[Note]:
        """The few notes most relevant to `task` for `agent` (none when the store has none)."""
        ...

    def track(self, agent: str, session: Trajectory) -> None:
        """Remember `session` so that its trajectory is reflected on when the run ends."""
        ...

    def brief(self, history: Sequence[Message]) -> list[Message]:
        """`history` as the reflection reads it, for the journal to keep (a resumed run
        replays the session's call and tracks this instead)."""
        ...
