"""The closing summary: the same text live and from the event log alone; the CLI commands."""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow.cli import build_parser
from swarmflow.flows import BANNER, create_target
from swarmflow.flows.demo import GOOD_FIX
from swarmflow.flows.progress import ProgressSink
from swarmflow.flows.target_repo import BUGGY_LINE, default_test_command
from swarmflow.record.events import (
    EventBase,
    HumanAnswered,
    HumanRequested,
    ModelCalled,
    OutcomesCompacted,
    RunFinished,
    RunStarted,
    SessionEnded,
    SessionStarted,
    ToolExecuted,
)
from swarmflow.record.files import EVENTS_FILE
from swarmflow.report import digest, render_report, report_from_dir
from swarmflow.report.candidates import candidates, parse_verdict, tally_line
from tests.support.chat_server import ChatServer, completion, wire_call

SECRET = "sk-test-SECRET-flows-0123456789"


def parse(argv: list[str]) -> argparse.Namespace:
    """The demo/report arguments as the CLI parses them."""
    return build_parser().parse_args(argv)


def test_demo_runs_offline_and_report_prints_the_same_summary_from_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a relative runs folder, as `make run` uses
    args = parse(["demo", "--runs-dir", "runs"])
    assert args.handler(args) == 0
    shown = capsys.readouterr()
    assert shown.out.startswith(BANNER + "\n")
    summary = shown.out[shown.out.index("swarmflow · parallel_coder_arbiter") :]
    assert "demo-scripted (scripted policy, no LLM)" in summary
    assert "← chosen" in summary and "dropped by compact: empty" in summary
    assert "arbiter chose candidate 0, confidence 0.90 (threshold 0.70)" in summary
    assert "candidate 0 applied to branch swarmflow/" in summary and "commit " in summary
    assert "adherence: yes" in summary and "[ok ] information flow" in summary
    assert "coder 0" in shown.err and "run ok" in shown.err  # the live progress

    run_dir = next(p for p in (tmp_path / "runs").iterdir() if (p / EVENTS_FILE).exists())
    elsewhere = tmp_path / "copy" / run_dir.name
    elsewhere.mkdir(parents=True)
    shutil.copy(run_dir / EVENTS_FILE, elsewhere / EVENTS_FILE)  # only the log travels
    report = parse(["report", str(run_dir)])
    assert report.handler(report) == 0
    assert capsys.readouterr().out == summary
    assert report_from_dir(elsewhere).replace(str(elsewhere), str(run_dir)) == summary


def test_demo_refuses_a_repo_without_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse(["demo", "--repo", str(tmp_path), "--runs-dir", str(tmp_path)])
    assert args.handler(args) == 2
    assert "need --model" in capsys.readouterr().err


def test_report_of_a_folder_without_a_log_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse(["report", str(tmp_path)])
    assert args.handler(args) == 2
    assert f"holds no {EVENTS_FILE}" in capsys.readouterr().err


# -- the summary from synthetic events ----------------------------------------------------------


class Log:
    """Builds events with a contiguous envelope."""

    def __init__(self) -> None:
        self.events: list[EventBase] = []

    def add(self, cls: type[EventBase], **fields: Any) -> Log:
        n = len(self.events)
        self.events.append(cls(run_id="r1", seq=n, ts=0.0, t=n / 10, **fields))
        return self


def small_run() -> Log:
    """A run with one coder, one reviewer and an unsure arbiter that went to a human."""
    coder = {"agent": "coder", "session": "coder#1", "branch": "parallel[0]"}
    review = {"agent": "reviewer", "session": "reviewer#2", "branch": "pipeline[0]"}
    verdict = {"choice": 0, "confidence": 0.5, "reason": "only one, barely"}
    return (
        Log()
        .add(RunStarted, flow="parallel_coder_arbiter", inputs={"task": "fix", "threshold": 0.7},
             agents=["coder", "reviewer", "arbiter"])
        .add(SessionStarted, model="gpt-4o-mini", **coder)
        .add(ModelCalled, tokens_in=1000, tokens_out=50, cost=0.01, tool_calls=["edit"], **coder)
        .add(SessionEnded, state="done", reason="submitted", **coder)
        .add(SessionStarted, model="gpt-4o-mini", **review)
        .add(ToolExecuted, tool="run_shell", arguments={"command": "pytest -q"},
             result="exit code: 1\n....F\n= 1 failed, 4 passed in 0.12s =", **review)
        .add(SessionEnded, state="done", reason="completed", **review)
        .add(OutcomesCompacted, kept=1, dropped=[{"index": 1, "reason": "empty"}])
        .add(HumanRequested, question="Apply its choice?", payload=verdict, channel="scripted")
        .add(HumanAnswered, answer="y", answered_by="scripted")
        .add(RunFinished, status="ok", seconds=1.5)
    )  # fmt: skip


def test_the_summary_shows_candidates_tests_verdict_human_and_usage() -> None:
    text = render_report(small_run().events, "runs/r1")
    assert "gpt-4o-mini" in text and "scripted policy" not in text
    assert "failed  1 failed, 4 passed in 0.12s" in text
    assert "dropped by compact: empty" in text
    assert "arbiter chose candidate 0, confidence 0.50 (threshold 0.70)" in text
    assert "human    asked 'Apply its choice?'; scripted answered y" in text
    assert "nothing applied" in text
    assert "$0.0100" in text and "1,000" in text
    assert "wall     1.50s" in text and "run dir  runs/r1" in text


def test_the_digest_maps_reviewers_to_their_candidates() -> None:
    events = small_run().events
    found = candidates(digest(events), events).by_index
    assert found[0].tests() == ("failed", "1 failed, 4 passed in 0.12s")
    assert found[0].coder is not None and found[0].coder.id == "coder#1"
    assert found[1].dropped == "empty"


def test_a_verdict_cut_short_in_the_log_still_reads() -> None:
    seen = parse_verdict('{"choice": 2, "confidence": 0.75, "reason": "the second is the sma')
    assert seen is not None and (seen.choice, seen.confidence) == (2, 0.75)
    assert seen.reason.startswith("the second")
    none = parse_verdict('{"choice": null, "confidence": 0.2, "reason": "no"}')
    assert none is not None and none.choice is None
    assert parse_verdict("Noted.") is None


def test_the_tally_line_is_the_runners_tally_line() -> None:
    assert tally_line("exit code: 0\n..\n===== 2 passed in 0.01s =====\n") == "2 passed in 0.01s"
    assert tally_line("exit code: 2\nmake: *** no rule") == "make: *** no rule"


# -- live progress ------------------------------------------------------------------------------


def test_progress_without_a_terminal_appends_one_line_per_change() -> None:
    out = io.StringIO()
    sink = ProgressSink(out, tty=False)
    for event in small_run().events:
        sink.write(event, "")
    sink.close()
    lines = out.getvalue().splitlines()
    assert "\x1b" not in out.getvalue()
    assert any("coder 0" in line and "running" in line and "edit" in line for line in lines)
    assert any("coder 0" in line and "submitted" in line and "1,050 tok" in line for line in lines)
    assert any("compact dropped candidate 1 (empty)" in line for line in lines)
    assert any("asking a human" in line for line in lines)


def test_progress_on_a_terminal_redraws_one_line_per_agent() -> None:
    out = io.StringIO()
    sink = ProgressSink(out, tty=True)
    for event in small_run().events[:4]:
        sink.write(event, "")
    frames = out.getvalue().split("\x1b[J")
    assert "\x1b[1F" in out.getvalue()  # moved back up over the block it drew
    last = [line for line in frames[-1].splitlines() if line.strip()]
    assert len(last) == 1 and "coder 0" in last[0] and "submitted" in last[0]


# -- a real model endpoint ----------------------------------------------------------------------


def _call(name: str, call_id: str, **arguments: Any) -> Any:
    """A chat completion asking for one tool call."""
    return completion(None, tool_calls=[wire_call(name, json.dumps(arguments), call_id)])


def _script_one_coder_run() -> list[Any]:
    """What a model endpoint answers, in order, when one coder fixes the demo target."""
    tests = default_test_command()
    review = {"passed": True, "tests": "4 passed", "notes": "fixes the even case"}
    verdict = {"choice": 0, "confidence": 0.95, "reason": "the only candidate, and it passes"}
    return [
        _call("search", "c1", pattern="def median"),
        _call("read_file", "c2", path="calc/stats.py"),
        _call("edit", "c3", path="calc/stats.py", old=BUGGY_LINE.rstrip("\n"), new=GOOD_FIX),
        _call("run_shell", "c4", command=tests),
        _call("submit", "c5", summary="averaged the two middle values for even counts"),
        _call("run_shell", "r1", command=tests),
        completion(json.dumps(review)),
        completion("Noted."),
        completion(json.dumps(verdict)),
    ]


@pytest.mark.allow_model_calls
def test_demo_with_a_model_name_runs_against_the_endpoint_in_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = anyio.run(create_target, tmp_path / "repo")
    with ChatServer() as server:
        server.script(*_script_one_coder_run())
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        argv = ["demo", "--model", "test-model", "--repo", str(target), "--task", "fix median",
                "--coders", "1", "--runs-dir", str(tmp_path / "runs"),
                "--force-tool-choice", "--forced-tool-mode", "required",
                "--timeout", "30"]  # fmt: skip
        args = parse(argv)
        assert args.handler(args) == 0, capsys.readouterr().err
    assert not server.errors
    assert len(server.bodies) == 9
    assert server.bodies[0]["tool_choice"] == "required"  # --force-tool-choice reached the wire
    assert {t["function"]["name"] for t in server.bodies[0]["tools"]} == {
        "read_file", "list_files", "search", "edit", "write_file", "run_shell", "submit",
    }  # fmt: skip
    out = capsys.readouterr().out
    assert out.startswith(f"model: test-model at {server.url}\n")
    assert "model    test-model\n" in out and "← chosen" in out and "passed" in out
    log = next((tmp_path / "runs").glob(f"*/{EVENTS_FILE}")).read_text()
    assert SECRET not in log
    branch = subprocess.run(["git", "branch", "--list", "swarmflow/*/result"], cwd=target,
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert branch.strip()
