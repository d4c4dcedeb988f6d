"""Live progress of a run: one line per agent with its state, tokens spent and current tool.

On a terminal the lines are redrawn in place (ANSI), with flow notes scrolling above them;
elsewhere (CI logs, pipes) each change is appended as a plain line, rendered by structlog's
console renderer. Everything shown goes through the secret policy (`core.secrets`) first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from swarmflow.core.secrets import Redactor, environment_redactor, scrubbing
from swarmflow.record.events import (
    AgentFinished,
    CacheBust,
    EventBase,
    HumanAnswered,
    HumanRequested,
    ModelCalled,
    OutcomesCompacted,
    PatchApplied,
    RunFinished,
    RunStarted,
    SessionEnded,
    SessionStarted,
    ToolExecuted,
    WorkspaceChanged,
)
from swarmflow.report.digest import agent_label, refusal_text

_COLORS = {
    "done": "32",
    "submitted": "32",
    "error": "31",
    "stopped": "31",
    "running": "33",
    "thinking": "36",
    "waiting": "2",
}
_END_STATES = {"submitted": "submitted", "completed": "done"}
# Plain logs get a line only when a session starts, runs a tool or ends; the in-between states
# would triple the log without telling a reader anything new.
_LOGGED = frozenset({"starting", "running", "done", "submitted", "error", "stopped"})


@dataclass
class Row:
    """What one agent session is doing now."""

    label: str
    state: str = "starting"
    tokens: int = 0
    tool: str = ""


class ProgressSink:
    """An event sink that shows the run as it happens."""

    event_types = frozenset(
        {
            "run_started",
            "run_finished",
            "session_started",
            "model_called",
            "tool_executed",
            "agent_finished",
            "session_ended",
            "outcomes_compacted",
            "workspace_changed",
            "human_requested",
            "human_answered",
            "handoff_refused",
            "cache_bust",
        }
    )
    """The events it reads; the event log may skip building the others as objects."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        tty: bool | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        """`redactor`: the secret policy for what is shown (default: this process's secrets)."""
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _isatty(self.stream) if tty is None else tty
        self.color = self.tty and not os.environ.get("NO_COLOR")
        self.rows: dict[str, Row] = {}
        self._drawn = 0
        self.redactor = redactor if redactor is not None else environment_redactor()
        self._line = _plain_line(self.redactor)
        self._busts: set[str] = set()
        """The causes of cache busts already warned about: each is shown once."""

    def write(self, event: EventBase | None, line: bytes) -> None:
        """Update the view for one event (None: one of the types it did not ask for)."""
        if event is None:
            return
        notes = self._notes(event)
        changed = self._update(event)
        if self.tty:
            self._redraw(notes)
            if isinstance(event, HumanRequested):
                self._drawn = 0  # a console prompt follows: keep the block, draw anew below
        else:
            self._append(event.t, notes, changed)

    def close(self) -> None:
        """Leave the final state on screen."""
        self.stream.flush()

    # -- state ------------------------------------------------------------------------------

    def _update(self, event: EventBase) -> Row | None:
        """Apply a session event to its row; the row when its state or tool changed."""
        if isinstance(event, SessionStarted):
            started = self.rows[event.session or "?"] = Row(
                agent_label(event.agent or "?", event.branch)
            )
            return started
        row = self.rows.get(event.session or "")
        if row is None:
            return None
        before = (row.state, row.tool)
        _apply(row, event)
        return row if (row.state, row.tool) != before else None

    def _notes(self, event: EventBase) -> list[str]:
        """Flow-level happenings worth a line of their own."""
        if isinstance(event, CacheBust):
            return self._bust_note(event)
        note = _note(event, self.rows)
        return [note] if note else []

    def _bust_note(self, event: CacheBust) -> list[str]:
        """A warning for the first cache bust of each cause (card, tools, a message)."""
        if event.part in self._busts:
            return []
        self._busts.add(event.part)
        row = self.rows.get(event.session or "")
        who = row.label if row is not None else (event.agent or "a session")
        return [
            f"warning: cache bust: {event.where} of {who}'s call {event.step} differs from "
            "its previous request; a prompt cache re-reads everything after it"
        ]

    # -- output -----------------------------------------------------------------------------

    def _append(self, t: float, notes: list[str], changed: Row | None) -> None:
        """Plain output: the notes, then the row if its state changed."""
        texts = [f" · {n}" for n in notes]
        if changed is not None and changed.state in _LOGGED:
            texts.append(self._row_text(changed)[1:])  # the renderer puts one space after the time
        lines = [self._line({"t": t, "event": text}) for text in texts]
        if lines:
            self.stream.write("\n".join(lines) + "\n")
            self.stream.flush()

    def _redraw(self, notes: list[str]) -> None:
        """Terminal output: rewind over the block, print the notes, redraw the block."""
        out = [f"\x1b[{self._drawn}F" if self._drawn else "", "\x1b[J"]
        out.extend(f"  · {n}\n" for n in notes)
        block = [self._row_text(r) for r in self.rows.values()]
        out.extend(f"{line}\n" for line in block)
        self.stream.write(self.redactor.scrub("".join(out)))
        self.stream.flush()
        self._drawn = len(block)

    def _row_text(self, row: Row) -> str:
        """One agent's line: label, state, tool, tokens."""
        state = f"{row.state:<10}"
        if self.color:
            state = f"\x1b[{_COLORS.get(row.state, '0')}m{state}\x1b[0m"
        return f"  {row.label:<12} {state} {row.tool:<14} {row.tokens:>9,} tok"


def _plain_line(redactor: Redactor) -> Callable[[dict[str, object]], str]:
    """One plain progress line from `{"t": seconds, "event": text}`: the secret policy, then
    structlog's console renderer with a time column and the text."""
    from structlog.dev import Column, ConsoleRenderer, KeyValueColumnFormatter

    def column(key: str, shown: Callable[[object], str]) -> Column:
        plain = KeyValueColumnFormatter(
            key_style=None, value_style="", reset_style="", value_repr=shown, width=0
        )
        return Column(key, plain)

    render = ConsoleRenderer(
        columns=[column("t", lambda t: f"{t:7.2f}s"), column("event", str), column("", str)]
    )
    scrub = scrubbing(redactor)

    def line(event: dict[str, object]) -> str:
        return str(render(None, "info", scrub(None, "info", event)))

    return line


def _apply(row: Row, event: EventBase) -> None:
    """Move a row along for one of its session's events."""
    if isinstance(event, ModelCalled):
        row.tokens += event.tokens_in + event.tokens_out
        row.state = "running" if event.tool_calls else "answered"
        row.tool = ", ".join(event.tool_calls) if event.tool_calls else ""
    elif isinstance(event, ToolExecuted):
        row.state = "thinking"
    elif isinstance(event, AgentFinished):
        row.state = "waiting"
        row.tool = ""
    elif isinstance(event, SessionEnded):
        row.state = _END_STATES.get(event.reason, event.state)
        row.tool = "" if event.state == "done" else _short(event.reason, 14)


def _note(event: EventBase, rows: dict[str, Row]) -> str:
    """A one-line note for flow-level events, or ''."""
    if isinstance(event, RunStarted):
        return f"run {event.run_id}: {event.flow}"
    if isinstance(event, OutcomesCompacted) and event.dropped:
        return "compact dropped " + "; ".join(
            f"candidate {d.get('index')} ({_short(str(d.get('reason', '')), 60)})"
            for d in event.dropped
        )
    if isinstance(event, WorkspaceChanged):
        return _workspace_note(event, rows)
    if isinstance(event, PatchApplied):
        files = ", ".join(event.files) or "no files"
        return f"applied to branch {event.git_branch} at {event.commit[:10]} ({files})"
    if isinstance(event, HumanRequested):
        return f"asking a human ({event.channel}): {_short(event.question, 70)}"
    if isinstance(event, HumanAnswered):
        return f"{event.answered_by} answered {event.answer!r}"
    if isinstance(event, RunFinished):
        return f"run {event.status} in {event.seconds:.2f}s"
    refused = refusal_text(event)  # every kind of refusal, worded as the report words it
    return f"refused {refused}" if refused else ""


def _workspace_note(event: WorkspaceChanged, rows: dict[str, Row]) -> str:
    """A commit in an agent's workspace."""
    files = ", ".join(event.files) or "no files"
    row = rows.get(event.session or "")
    who = row.label if row is not None else (event.agent or "the flow")
    return f"{who} committed {event.commit[:10]} ({files})"


def _short(text: str, width: int) -> str:
    """One line of at most `width` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _isatty(stream: TextIO) -> bool:
    """Whether `stream` is a terminal."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or stream-like objects without a terminal
        return False
