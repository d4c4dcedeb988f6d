"""What each agent was told between its steps, and when: the inbox's deliveries, folded.

One line per item given (the time, the step it came before, its source, its first line), at
most `MAX_PER_AGENT` per agent, and what the language servers cost: passes and seconds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from swarmflow.record.events import EventBase

MAX_PER_AGENT = 20
"""Deliveries listed per agent; the counts by source cover the rest."""


@dataclass(slots=True)
class _Told:
    lines: list[str] = field(default_factory=list)
    sources: Counter[str] = field(default_factory=Counter)


@dataclass(slots=True)
class EvidenceFold:
    """Fed one event at a time; renders the report's evidence section."""

    told: dict[str, _Told] = field(default_factory=dict)
    passes: int = 0
    pass_seconds: float = 0.0
    unavailable: list[str] = field(default_factory=list)

    def add(self, e: EventBase) -> None:
        kind = getattr(e, "type", "")
        if kind == "evidence_delivered":
            self._delivered(e)
        elif kind == "feedback_checked":
            self.passes += 1
            self.pass_seconds += float(getattr(e, "seconds", 0.0))
        elif kind == "feedback_unavailable":
            self.unavailable.append(f"{getattr(e, 'server', '')}: {getattr(e, 'reason', '')}")

    def _delivered(self, e: EventBase) -> None:
        told = self.told.setdefault(e.agent or "?", _Told())
        source = str(getattr(e, "source", ""))
        told.sources[source] += 1
        if len(told.lines) < MAX_PER_AGENT:
            text = str(getattr(e, "text", ""))
            first = next((line for line in text.splitlines() if line.strip()), "")
            cut = "" if getattr(e, "shown", True) else " (over the size cap: not shown)"
            step = getattr(e, "step", 0)
            told.lines.append(f"  {e.t:8.2f}s  before step {step}  [{source}] {first[:100]}{cut}")

    def render(self) -> str:
        if not self.told and not self.passes and not self.unavailable:
            return ""
        parts = ["Evidence between steps"]
        for agent, told in sorted(self.told.items()):
            counts = ", ".join(f"{n} {source}" for source, n in sorted(told.sources.items()))
            parts.append(f"{agent}: {counts}")
            parts += told.lines
            more = sum(told.sources.values()) - len(told.lines)
            if more > 0:
                parts.append(f"  ... and {more} more")
        if self.passes:
            each = self.pass_seconds / self.passes
            passes = f"{self.passes} pass{'es' * (self.passes != 1)}"
            parts.append(
                f"language servers: {passes}, {self.pass_seconds:.3f}s in all "
                f"({each * 1000:.1f} ms a pass)"
            )
        parts += [f"language server unavailable: {reason}" for reason in self.unavailable]
        return "\n".join(parts)
