"""What a run returns: `RunResult`, with its usage, graphs and events."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swarmflow.record.eventlog import AgentUsage
from swarmflow.record.events import EventBase
from swarmflow.record.files import EVENTS_FILE
from swarmflow.record.sinks import MemorySink, read_events
from swarmflow.runtime.graph import RunGraph


@dataclass
class RunGraphs:
    """The declared topology and the executed graph of a run."""

    topology: Any
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
    _memory: MemorySink | None = field(default=None, repr=False)

    @property
    def events_path(self) -> Path:
        return self.run_dir / EVENTS_FILE

    @property
    def events(self) -> list[EventBase]:
        """Every event, from memory when kept, else read back from the JSONL log."""
        if self._memory is not None:
            return list(self._memory.events)
        return list(read_events(self.events_path))

    @property
    def tokens(self) -> int:
        return sum(u.tokens for u in self.usage.values())

    @property
    def cost(self) -> float:
        return sum(u.cost for u in self.usage.values())

    def raise_for_status(self) -> RunResult:
        """Re-raise the flow's error, if it failed."""
        if self.error is not None:
            raise self.error
        return self
