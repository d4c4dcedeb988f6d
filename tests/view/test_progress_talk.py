"""Progress that talks: the sessions at work in running runs, with the last thing each did, in
the terminal's periodic report."""

from __future__ import annotations

import io
import threading
from typing import Any

from swarmflow.cli.progress_talk import report_lines, talking
from swarmflow.report.live import RunWatch
from tests.view.conftest import HeldRun

WAIT = 30.0


class Written(io.StringIO):
    """A stream that says when something was written to it."""

    def __init__(self) -> None:
        super().__init__()
        self.wrote = threading.Event()

    def write(self, text: str) -> int:
        self.wrote.set()
        return super().write(text)


class Counts:
    """A progress value, as a batch's hook holds it."""

    def line(self) -> str:
        return "done 0/1  failed 0  running 1"

    def arm_lines(self) -> list[str]:
        return ["  single: finished 0/1  running 1  failed 0"]


def test_each_running_session_says_the_last_thing_it_did(held_run: tuple[HeldRun, Any]) -> None:
    held, portal = held_run
    assert held.entered[0].wait(WAIT)
    watch = RunWatch(held.runs)
    (working,) = watch.at_work()
    assert "surveyor · surveyor#" in working.lane and "started" in working.last
    portal.call(held.gates[0].set)
    assert held.entered[1].wait(WAIT)  # the tool has run; the second model call waits
    (working,) = watch.at_work()
    assert working.last == "measure" and working.line().startswith(working.run)
    lines = report_lines(Counts(), watch)
    assert lines[:2] == [Counts().line(), "  single: finished 0/1  running 1  failed 0"]
    assert lines[2] == "  1 sessions at work:" and "measure" in lines[3]
    portal.call(held.gates[1].set)
    assert held.finished.wait(WAIT)
    assert watch.at_work() == []  # a finished run has no session at work


def test_the_report_comes_while_the_work_goes_on(held_run: tuple[HeldRun, Any]) -> None:
    held, _portal = held_run
    assert held.entered[0].wait(WAIT)

    class Hook:
        progress = Counts()

    stream = Written()
    with talking(Hook(), held.runs, stream, every=0.01):
        assert stream.wrote.wait(WAIT)  # written by the reporting thread, unasked
    text = stream.getvalue()
    assert text.startswith("done 0/1") and "sessions at work" in text
