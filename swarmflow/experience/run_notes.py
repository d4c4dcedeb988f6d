"""A run's experience: the store it reads and writes, the sessions it will reflect on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from swarmflow.core.experience_port import Note, Trajectory
from swarmflow.core.messages import Message
from swarmflow.experience.store import ExperienceError, ExperienceStore
from swarmflow.experience.trajectory import brief

TOP_NOTES = 3


class RunExperience:
    """What one run offers its sessions from the store and remembers for its reflection."""

    def __init__(self, store: ExperienceStore, run_id: str, repository: str | Path | None) -> None:
        self.store = store
        self.run_id = run_id
        self.repository = str(repository or "")
        self.sessions: dict[str, list[Trajectory]] = {}
        """The sessions of each agent, in the order they began."""

    def offered(self, agent: str, task: str) -> Sequence[Note]:
        return self.store.search(agent, task, TOP_NOTES)

    def track(self, agent: str, session: Trajectory) -> None:
        self.sessions.setdefault(agent, []).append(session)

    def brief(self, history: Sequence[Message]) -> list[Message]:
        return brief(history)


DEFAULT_STORE = "experience.db"
"""The store `experience=True` (and `--experience` without a path) uses, in the runs root."""


def open_store(option: object, runs_root: Path) -> ExperienceStore | None:
    """The store `run(experience=...)` names: True for the runs root's `experience.db`, a
    path for that file, None or False for none."""
    if option is None or option is False:
        return None
    if option is True:
        return ExperienceStore(runs_root / DEFAULT_STORE)
    if isinstance(option, str | Path) and str(option).strip():
        return ExperienceStore(option)
    raise ExperienceError(
        f"experience={option!r}: give True (the runs root's {DEFAULT_STORE}) or a file path"
    )
