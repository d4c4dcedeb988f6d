"""Progress that talks: the sessions at work in running runs, with the last thing each did, in
the terminal's periodic report."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

from swarmflow.cli.progress_talk import report_lines, talking
from swarmflow.report.live import RunWatch, calls_by_arm
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
    assert lines[2] == "  model calls in flight: 1"  # the second call waits on its gate
    assert lines[3] == "  1 sessions at work:" and "measure" in lines[4]
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


def test_the_model_calls_in_flight_are_counted_from_the_journal(
    held_run: tuple[HeldRun, Any],
) -> None:
    held, portal = held_run
    assert held.entered[0].wait(WAIT)  # the first model call was sent and has not answered
    watch = RunWatch(held.runs)
    (working,) = watch.at_work()
    (run,) = watch.in_flight()
    assert watch.in_flight() == {run: 1} and working.calling == 1
    assert working.line().endswith("calling the model (1)")
    lines = report_lines(Counts(), watch)
    assert "  model calls in flight: 1" in lines
    portal.call(held.gates[0].set)
    assert held.entered[1].wait(WAIT)  # answered, its tool run, the second call sent
    (working,) = watch.at_work()
    assert watch.in_flight() == {run: 1} and working.last == "measure"
    portal.call(held.gates[1].set)
    assert held.finished.wait(WAIT)
    assert watch.at_work() == [] and watch.in_flight() == {}


def test_calls_of_a_process_that_died_are_not_in_flight(tmp_path: Path) -> None:
    """A journal whose process died mid-call, then a resumed process that opened it again:
    only the new process's calls that neither finished nor failed count, and only for
    sessions at work."""
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    envelope = {"run_id": "r1", "ts": 0.0, "t": 1.0, "branch": "", "agent": "a"}
    events = [
        {**envelope, "seq": 0, "type": "run_started", "flow": "f", "agent": None},
        {**envelope, "seq": 1, "type": "session_started", "session": "a#1"},
        {**envelope, "seq": 2, "type": "session_started", "session": "a#2", "branch": "p[1]"},
        {**envelope, "seq": 3, "type": "session_ended", "session": "a#2", "branch": "p[1]",
         "state": "error", "reason": "cancelled"},
    ]  # fmt: skip
    key = {"branch": "", "agent": "a", "purpose": "turn", "digest": "d1"}
    gone = {**key, "branch": "p[1]", "digest": "d2"}
    journal = [
        {"kind": "journal_opened", "version": 4, "run_id": "r1"},
        {"kind": "model_call_started", "key": key},  # its process died in it
        {"kind": "journal_opened", "version": 4, "run_id": "r1"},
        {"kind": "model_call_started", "key": key},
        {"kind": "model_call_started", "key": {**key, "digest": "d3"}},
        {"kind": "model_call_finished", "key": {**key, "digest": "d3"}},
        {"kind": "model_call_started", "key": {**key, "digest": "d4"}},
        {"kind": "model_call_failed", "key": {**key, "digest": "d4"}, "error": "RuntimeError"},
        {"kind": "model_call_started", "key": gone},  # its session ended
    ]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (run_dir / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in journal))
    watch = RunWatch(tmp_path)
    (working,) = watch.at_work()
    assert working.calling == 1 and watch.in_flight() == {"runs/r1": 1}
    with (run_dir / "journal.jsonl").open("a") as fh:  # read as it grows: the rest is new
        fh.write(json.dumps({"kind": "model_call_finished", "key": key}) + "\n")
        fh.write('{"kind":"model_call_started","key":{"bran')  # being written: not read yet
    watch.at_work()
    assert watch.in_flight() == {}


def test_calls_in_flight_are_summed_per_arm() -> None:
    calls = {"arms/single/runs/t1-r1": 2, "arms/single/runs/t2-r1": 1, "arms/B1.c2/runs/t1-r1": 1,
             "runs/task-000001": 4}  # fmt: skip
    assert calls_by_arm(calls) == {"single": 3, "B1.c2": 1}
