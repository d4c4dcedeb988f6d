"""What the harness tests share: reading the record, and finding processes left behind."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from swarmflow.record.events import EventBase
from swarmflow.runner.result import RunResult


def of_type(result: RunResult, kind: str) -> list[Any]:
    return [e for e in result.events if getattr(e, "type", "") == kind]


def events_in(run_dir: Path, kind: str) -> list[EventBase]:
    from swarmflow.record.events import parse_event

    lines = (run_dir / "events.jsonl").read_bytes().splitlines()
    return [e for e in map(parse_event, lines) if getattr(e, "type", "") == kind]


def processes_with(marker: str) -> list[int]:
    """The pids whose command line holds `marker` (this test's own harness processes)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found
