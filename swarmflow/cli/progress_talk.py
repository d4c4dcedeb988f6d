"""Progress that talks: every few seconds, while a batch or an experiment runs, the count line,
the counts per arm, the model calls in flight (per arm in an experiment), and each session at
work in a running run with the last thing it did (and whether it is calling the model).

The counts come from the progress hook's latest value; what the sessions do from the runs'
logs (`swarmflow.report.live`). One thread, woken by a timer and stopped when the command
ends; it only reads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TextIO

from swarmflow.core.secrets import scrubbed
from swarmflow.report.live import RunWatch, calls_by_arm


class Counts(Protocol):
    """A batch's or an experiment's progress: its counts, its count line, its warnings."""

    @property
    def total(self) -> int: ...

    @property
    def done(self) -> int: ...

    @property
    def warnings(self) -> list[str]: ...

    def line(self) -> str: ...


EVERY = 5.0
"""Seconds between two reports."""
MOST_SESSIONS = 12
"""The most sessions at work listed in one report (the rest are counted)."""


def report_lines(progress: Counts | None, watch: RunWatch) -> list[str]:
    """One report: the count line, per-arm counts where there are arms, sessions at work."""
    lines = [progress.line()] if progress is not None else []
    arm_lines = getattr(progress, "arm_lines", None)
    if callable(arm_lines):
        lines.extend(arm_lines())
    working = watch.at_work()
    calls = watch.in_flight()
    if calls:
        lines.append(f"  model calls in flight: {sum(calls.values())}{_by_arm(calls)}")
    if working:
        lines.append(f"  {len(working)} sessions at work:")
        lines.extend(f"    {w.line()}" for w in working[:MOST_SESSIONS])
        if len(working) > MOST_SESSIONS:
            lines.append(f"    ... and {len(working) - MOST_SESSIONS} more")
    return lines


def _by_arm(calls: dict[str, int]) -> str:
    """` (single 2, team 1)` for an experiment's runs (`arms/<arm>/runs/...`), else ''."""
    arms = calls_by_arm(calls)
    return f" ({', '.join(f'{arm} {n}' for arm, n in arms.items())})" if arms else ""


@contextmanager
def talking(latest: object, root: Path, stream: TextIO, every: float = EVERY) -> Iterator[None]:
    """While the block runs, write a report to `stream` every `every` seconds; `latest` is the
    progress hook, holding the latest progress as `.progress`."""
    stop = threading.Event()
    watch = RunWatch(root)

    def talk() -> None:
        while not stop.wait(every):
            lines = report_lines(getattr(latest, "progress", None), watch)
            if lines:
                stream.write("\r\033[K" if stream.isatty() else "")
                stream.write(scrubbed("\n".join(lines)) + "\n")
                stream.flush()

    thread = threading.Thread(target=talk, name="swarmflow-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=every + 5)
