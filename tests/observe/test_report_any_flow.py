"""`swarmflow report` for any flow: output, status and why, spend per agent, timeline,
refusals, retries and adherence; a truncated log read up to its last whole line; a foreign
or empty file refused in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarmflow import Agent, RunResult, Team, agent, agent_session, flow, parallel, run
from swarmflow.cli import main
from swarmflow.core.messages import ModelResponse, ToolCall
from swarmflow.record.files import EVENTS_FILE
from swarmflow.report import LogError, read_log, report_from_dir
from swarmflow.testing import FunctionModel

TEAM = Team([Agent("writer"), Agent("editor"), Agent("idle")], edges=[("writer", "editor")])


@flow(team=TEAM)
async def essay(topic: str) -> dict[str, Any]:
    drafts = await parallel(lambda i: agent("writer", f"{topic} #{i}"), n=2)
    async with agent_session("editor") as editor:
        best = await editor.ask("Pick one: " + " | ".join(o.value.text for o in drafts))
    return {"topic": topic, "chosen": best.text}


def _model(request: Any) -> str:
    return f"{request.agent} says {request.prompt[:20]}"


async def _essay() -> RunResult:
    return await run(essay, topic="rivers", model=FunctionModel(_model))


async def test_a_plain_flow_reports_its_output_status_spend_and_timeline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = await _essay()
    assert main(["report", str(result.run_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"swarmflow · essay · {result.run_id} · ok\n")
    assert "status   ok: the flow returned its output" in out
    assert 'output   {"topic": "rivers", "chosen": ' in out
    assert "Candidates" not in out and "verdict" not in out  # the flagship's section only
    usage = out[out.index("Tokens and cost") : out.index("Timeline")]
    assert "writer" in usage and "editor" in usage and "total" in usage
    assert "prefix reuse" in usage
    timeline = out[out.index("Timeline") :]
    assert "writer 0 · writer#" in timeline and "model call 1" in timeline
    assert "[DEV] participation" in out and "'idle' did no work" in out


async def test_a_failed_run_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    @flow(team=Team([Agent("a")]))
    async def broken() -> None:
        await agent("a", "go")
        raise RuntimeError("the flow's own bug")

    result = await run(broken, model=FunctionModel(lambda r: "ok"), raise_on_failure=False)
    assert result.status == "failed"
    assert main(["report", str(result.run_dir)]) == 0
    out = capsys.readouterr().out
    assert "status   failed: the run failed" in out
    assert "error    RuntimeError: the flow's own bug" in out
    assert "output" not in out.split("Tokens")[0].replace("returned its output", "")


async def test_refusals_and_retries_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    team = Team([Agent("a", tools=["read_file"]), Agent("b")], edges=[("a", "b")])

    @flow(team=team)
    async def f() -> str:
        return (await agent("a", "go")).text

    def policy(request: Any) -> Any:
        if len(request.messages) < 3:
            return ModelResponse(tool_calls=(ToolCall("c1", "run_shell", '{"command": "ls"}'),))
        return "done"

    result = await run(f, model=FunctionModel(policy))
    assert main(["report", str(result.run_dir)]) == 0
    out = capsys.readouterr().out
    refusals = out[out.index("Refusals") :]
    assert "tool run_shell for a:" in refusals


async def test_a_truncated_log_is_read_up_to_its_last_whole_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = await _essay()
    log = result.events_path
    data = log.read_bytes()
    cut = data[: len(data) - 40]  # run_finished torn in half, as a killed writer leaves it
    log.write_bytes(cut)
    assert main(["report", str(result.run_dir)]) == 0
    out = capsys.readouterr().out
    lines = cut.count(b"\n")
    assert f"log truncated: read {lines} events, up to line {lines}" in out
    assert f"line {lines + 1} was cut off before its end" in out
    assert "status   unfinished: the log ends at" in out


async def test_a_foreign_line_in_the_middle_stops_the_reading_there() -> None:
    result = await _essay()
    lines = result.events_path.read_bytes().splitlines(keepends=True)
    result.events_path.write_bytes(b"".join([*lines[:3], b'{"not": "an event"}\n', *lines[3:]]))
    read = read_log(result.run_dir)
    assert len(read.events) == 3 and read.stopped_at == 4
    assert "line 4 is not an event" in read.note()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "is empty"),
        (b"\n\n", "is empty"),
        (b"hello world\n", "is not a swarmflow event log: line 1"),
        (b'{"type": "run_started"}\n', "is not a swarmflow event log: line 1"),
        (b"\xff\xfe\x00garbage", "is not a swarmflow event log: line 1"),
    ],
)
@pytest.mark.parametrize("command", ["report", "graph"])
def test_an_empty_or_foreign_log_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, says: str, command: str
) -> None:
    (tmp_path / EVENTS_FILE).write_bytes(content)
    assert main([command, str(tmp_path)]) == 2
    shown = capsys.readouterr()
    assert shown.out == ""
    assert shown.err.count("\n") == 1 and says in shown.err and "Traceback" not in shown.err
    with pytest.raises(LogError):
        report_from_dir(tmp_path)


def test_a_directory_without_a_log_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"holds no {EVENTS_FILE}" in err and err.count("\n") == 1


async def test_the_report_hides_what_is_secret_where_it_is_read(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    secret = "sk-live-REPORTSECRET-0123456789"
    result = await run(essay, topic=f"rivers {secret}", model=FunctionModel(_model))
    assert secret in result.events_path.read_text()  # not a secret where the run was made
    monkeypatch.setenv("VIEWER_API_KEY", secret)
    assert main(["report", str(result.run_dir)]) == 0
    out = capsys.readouterr().out
    assert secret not in out and "[redacted]" in out
    page = tmp_path / "page.html"
    assert main(["report", str(result.run_dir), "--html", str(page)]) == 0
    assert secret not in page.read_text() and "[redacted]" in page.read_text()


def test_swarmflow_run_shows_the_live_progress(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.dsl.helpers import EXAMPLES

    flagship = str(EXAMPLES / "parallel_coder_arbiter.swarm")
    assert main(["run", flagship, "--demo", "--input", "task=make the tests pass"]) == 0
    shown = capsys.readouterr()
    assert "status: ok" in shown.out
    assert "coder 0" in shown.err and "run ok" in shown.err  # the demo's progress lines
