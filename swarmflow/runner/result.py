"""What a run returns: `RunResult`, with its usage, graphs and events."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swarmflow.core.team import Team
from swarmflow.record.eventlog import AgentUsage
from swarmflow.record.events import EventBase
from swarmflow.record.files import EVENTS_FILE
from swarmflow.record.sinks import MemorySink, read_events
from swarmflow.runtime.graph import RunGraph


@dataclass
class RunGraphs:
    """The declared topology and the executed graph of a run."""

    topology: Team
    executed: RunGraph

    def mermaid(self) -> str:
        return f"{self.topology.mermaid()}\n\n{self.executed.mermaid()}"


@dataclass
class RunResult:
    """What a run produced and how it went."""

    output: Any
    status: str
    run_id: str
    run_dir: Path
    usage: dict[str, AgentUsage]
    graph: RunGraphs
    error: BaseException | None = None
    wall: float = 0.0
    pause_token: str | None = None
    resumed: bool = False
    """Whether this process resumed the run (its earlier processes' events are in the log)."""
    earlier_tokens: int = 0
    """What the run's earlier processes spent, when this one resumed it (0 otherwise)."""
    earlier_cost: float = 0.0
    _memory: MemorySink | None = field(default=None, repr=False)

    @property
    def events_path(self) -> Path:
        return self.run_dir / EVENTS_FILE

    @property
    def events(self) -> list[EventBase]:
        """Every event of the run, from memory when kept, else read back from the JSONL log
        (the log, too, after a resume: it holds the earlier processes' events as well)."""
        if self._memory is not None and not self.resumed:
            return list(self._memory.events)
        return list(read_events(self.events_path))

    @property
    def tokens(self) -> int:
        """Tokens this process spent: after a resume, the calls it made (replayed ones are
        free). The whole run's, as `swarmflow runs` shows them, are `total_tokens`."""
        return sum(u.tokens for u in self.usage.values())

    @property
    def cost(self) -> float:
        """Cost of this process's calls (see `tokens`); the whole run's is `total_cost`."""
        return sum(u.cost for u in self.usage.values())

    @property
    def total_tokens(self) -> int:
        """Tokens the run spent over every process that ran it."""
        return self.earlier_tokens + self.tokens

    @property
    def total_cost(self) -> float:
        return self.earlier_cost + self.cost

    def raise_for_status(self) -> RunResult:
        """Re-raise the flow's error, if it failed."""
        if self.error is not None:
            raise self.error
        return self
