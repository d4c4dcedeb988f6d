"""One bad file never stops `swarmflow report` or `swarmflow graph` with a hang or a traceback:
a path that is not a regular file is refused at once, in one line; a line nested too deep, not
UTF-8 or too long to be an event cuts the log there, and the report says so. The report reads
the log as a stream, in one pass."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from swarmflow import Agent, RunResult, Team, agent, flow, run
from swarmflow.cli import main
from swarmflow.record.events import EventBase
from swarmflow.record.files import EVENTS_FILE
from swarmflow.report import read_log, render_report, report_from_dir, report_of
from swarmflow.report.log import MAX_LINE
from swarmflow.testing import FunctionModel

PROMPTLY = 120
"""Seconds a command may take to refuse a bad log: far more than it needs; a hang fails it."""
DEEP = 100_000


@flow(team=Team([Agent("writer"), Agent("editor")], edges=[("writer", "editor")]))
async def two_steps(topic: str) -> str:
    draft = (await agent("writer", f"a line on {topic}")).text
    return (await agent("editor", f"tighten: {draft}")).text


async def a_run() -> RunResult:
    result = await run(two_steps, topic="rivers", model=FunctionModel(lambda r: f"{r.agent} ok"))
    assert result.run_dir is not None
    return result


def fifo(path: Path) -> None:
    os.mkfifo(path)


def dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def directory(path: Path) -> None:
    path.mkdir()


NOT_FILES: dict[str, tuple[Callable[[Path], None], str]] = {
    "a FIFO": (fifo, "is a FIFO (named pipe), not a regular file"),
    "/dev/zero": (dev_zero, "is a character device, not a regular file"),
    "a directory": (directory, "is a directory, not a regular file"),
}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line in its own process, bounded: a command that blocks fails the test."""
    return subprocess.run(
        [sys.executable, "-m", "swarmflow.cli", *args],
        capture_output=True,
        text=True,
        timeout=PROMPTLY,
        check=False,
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="POSIX")
@pytest.mark.parametrize("command", ["report", "graph"])
@pytest.mark.parametrize("kind", NOT_FILES.keys())
def test_a_log_that_is_not_a_regular_file_is_refused_at_once(
    tmp_path: Path, kind: str, command: str
) -> None:
    make, says = NOT_FILES[kind]
    make(tmp_path / EVENTS_FILE)
    done = cli(command, str(tmp_path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert (
        done.stderr == f"swarmflow {command}: {tmp_path / EVENTS_FILE} {says}: not an event log\n"
    )


def nested_array() -> bytes:
    return b"[" * DEEP + b"]" * DEEP


def nested_in_inputs() -> bytes:
    inner = b'{"a": ' * DEEP + b"1" + b"}" * DEEP
    return (
        b'{"type": "run_started", "run_id": "r", "seq": 0, "ts": 0, "t": 0, "flow": "f", '
        b'"inputs": {"x": ' + inner + b"}}"
    )


def nested_with_a_lone_surrogate() -> bytes:
    """Python's JSON parser reads this one (pydantic's refuses the escape), up to its depth."""
    inner = b"[" * 300 + b"]" * 300
    return (
        b'{"type": "run_started", "run_id": "r", "seq": 0, "ts": 0, "t": 0, "flow": "\\udcff", '
        b'"inputs": {"x": ' + inner + b"}}"
    )


def not_utf8() -> bytes:
    return b'{"type": "run_finished", "run_id": "r", "seq": 9, "ts": 0, "t": 0, "status": "ok", ' \
        b'"error": "\xff\xfe"}'  # fmt: skip


def too_long() -> bytes:
    return b'{"type": "run_finished", "error": "' + b"x" * MAX_LINE + b'"}'


BAD_LINES: dict[str, tuple[Callable[[], bytes], str]] = {
    "a list nested 100,000 deep": (nested_array, "is not an event"),
    "inputs nested 100,000 deep": (nested_in_inputs, "is not an event"),
    "nested 300 deep with a lone surrogate": (nested_with_a_lone_surrogate, "is not an event"),
    "bytes that are not UTF-8": (not_utf8, "is not an event"),
    "a line over the cap": (too_long, f"is longer than {MAX_LINE >> 20} MiB: not an event"),
}


@pytest.mark.parametrize("name", BAD_LINES.keys())
async def test_a_bad_line_after_valid_events_cuts_the_log_there(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = await a_run()
    valid = report_from_dir(result.run_dir)
    lines = result.events_path.read_bytes().count(b"\n")
    line, problem = BAD_LINES[name]
    with result.events_path.open("ab") as fh:
        fh.write(line() + b"\n")
    note = f"log truncated: read {lines} events, up to line {lines}; line {lines + 1} {problem}"
    assert report_from_dir(result.run_dir) == valid + note + "\n"
    assert main(["report", str(result.run_dir)]) == 0
    assert capsys.readouterr().out.endswith(f"\n{note}\n")
    assert main(["graph", str(result.run_dir)]) == 0


@pytest.mark.parametrize("name", BAD_LINES.keys())
@pytest.mark.parametrize("command", ["report", "graph"])
def test_a_log_whose_first_line_is_bad_is_one_line_and_exit_2(
    tmp_path: Path, name: str, command: str
) -> None:
    (tmp_path / EVENTS_FILE).write_bytes(BAD_LINES[name][0]() + b"\n")
    done = cli(command, str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "line 1 is not an event" in done.stderr


async def test_a_valid_log_reports_what_the_live_run_printed() -> None:
    result = await a_run()
    assert report_from_dir(result.run_dir) == render_report(result.events, result.run_dir)
    assert read_log(result.run_dir).note() == ""


def once(events: list[EventBase]) -> Iterator[EventBase]:
    """The events, readable a single time."""
    yield from events


async def test_the_report_is_folded_from_a_stream_read_once() -> None:
    result = await a_run()
    whole = report_from_dir(result.run_dir)
    stream = read_log(result.run_dir).stream()
    assert iter(stream) is stream  # a one-pass iterator, not a list
    assert report_of(stream, result.run_dir) == whole
    assert next(stream, None) is None and stream.count == len(result.events)
    assert render_report(once(list(result.events)), result.run_dir) == whole
