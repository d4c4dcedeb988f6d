"""What the report says about how the runs were graded: by which grader, and whether inside
the sandbox.

Grading that runs a product's code outside the sandbox (bubblewrap missing, or a grader
declared `sandbox="none"`) is said loudly, once per call: a warning line on the terminal, a
`sandbox_unavailable` event in the experiment's own event log (`OUT/events.jsonl`) and, read
back from that log, a line in the report's header.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from swarmflow.core.errors import ConfigError
from swarmflow.core.reading import read_bytes
from swarmflow.core.secrets import scrubbed
from swarmflow.experiments.graders import Grader, TestsGrader
from swarmflow.experiments.grades import Grade
from swarmflow.record.events import SandboxUnavailable, parse_event
from swarmflow.record.lines import read_lines
from swarmflow.tools.sandbox import bwrap_problem

EVENTS = "events.jsonl"


@dataclass(frozen=True, slots=True)
class Grading:
    """The graders the grades name, and why grading ran outside the sandbox, if it did."""

    graders: tuple[str, ...] = ()
    unsandboxed: tuple[str, ...] = ()


def unsandboxed_reason(grader: Grader) -> str | None:
    """Why this grader would run the products' code outside the sandbox here (None: it runs
    inside, or runs no product code)."""
    if not isinstance(grader, TestsGrader):
        return None
    if grader.sandbox == "none":
        return "the tests grader is declared sandbox='none'"
    return bwrap_problem()


def refuse_unsandboxed(grader: Grader) -> None:
    """Refuse, before anything runs or is paid, a grader that must run in the sandbox where
    it cannot (`TestsGrader(sandbox="bwrap")`, `--require-sandbox`)."""
    if isinstance(grader, TestsGrader) and grader.sandbox == "bwrap":
        problem = bwrap_problem()
        if problem is not None:
            raise ConfigError(f"the tests grader must run in the sandbox, but {problem}")


def sandbox_required(grader: Grader) -> Grader:
    """The grader made to run only in the sandbox (`--require-sandbox`); other kinds run no
    product's code and are given back as they are."""
    if isinstance(grader, TestsGrader):
        return grader.model_copy(update={"sandbox": "bwrap"})
    return grader


def announce_unsandboxed(root: Path, name: str, reason: str, warnings: list[str]) -> None:
    """Say once that products' code is graded on this machine: a terminal warning and a
    `sandbox_unavailable` event in `OUT/events.jsonl`."""
    warnings.append(f"grading runs the products' code outside the sandbox: {reason}")
    path = root / EVENTS
    seq = _count_lines(path) + 1
    event = SandboxUnavailable(run_id=name, seq=seq, ts=time.time(), t=0.0, reason=reason)
    line = scrubbed(event.model_dump_json()).encode("utf-8") + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    return read_bytes(path, "the experiment's event log").count(b"\n")


def read_grading(root: Path, grades: list[Grade], warnings: list[str]) -> Grading:
    """What the grades and the experiment's event log say about the grading."""
    graders = tuple(dict.fromkeys(g.grader for g in grades if g.grader))
    reasons: list[str] = []

    def take(raw: bytes) -> None:
        event = parse_event(raw)
        if isinstance(event, SandboxUnavailable):
            reasons.append(event.reason)

    path = root / EVENTS
    if path.is_file():
        try:
            read_lines(path, "an event", take)
        except ConfigError as exc:
            warnings.append(str(exc))
    return Grading(graders, tuple(dict.fromkeys(reasons)))
