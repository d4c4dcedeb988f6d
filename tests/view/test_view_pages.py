"""`swarmflow view` without a browser: what each page holds, what it refuses, the command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from swarmflow import RunResult, run, run_sync
from swarmflow.cli import main
from swarmflow.core.messages import ModelResponse, ToolCall
from swarmflow.testing import FunctionModel
from swarmflow.view.app import build_app
from tests.view.conftest import survey


def _policy(result: str = "Nile") -> Any:
    def answer(request: Any) -> Any:
        if not any(m.role == "assistant" for m in request.messages):
            return ModelResponse(
                tool_calls=(ToolCall("c1", "measure", f'{{"river": "{result}"}}'),)
            )
        return "The Nile is 6,650 km long."

    return answer


async def _run(runs: Path, river: str = "Nile") -> RunResult:
    return await run(survey, river=river, model=FunctionModel(_policy(river)), runs_root=runs)


def _client(root: Path) -> TestClient:
    return TestClient(build_app(root), base_url="http://127.0.0.1")


async def test_the_index_lists_each_run_and_a_run_page_holds_its_transcript(
    tmp_path: Path,
) -> None:
    result = await _run(tmp_path / "runs")
    client = _client(tmp_path / "runs")
    index = client.get("/").text
    assert f'href="/run/{result.run_id}"' in index and "survey" in index
    page = client.get(f"/run/{result.run_id}")
    assert page.status_code == 200
    assert "default-src 'self'" in page.headers["content-security-policy"]
    text = page.text
    assert "measure(c1)" in text and "Nile is 6,650 km long" in text  # the call, its result
    assert "How long is the Nile?" in text  # what the session was asked (from the journal)
    assert 'class="block k-model' in text and 'class="block k-tool' in text
    assert "Adherent to the declared organization" in text
    fragment = client.get(f"/fragment/run/{result.run_id}").json()
    assert fragment["status"] == "ok" and fragment["live"] is False
    assert set(fragment["html"]) >= {"timeline", "transcripts", "budgets", "sessions"}
    report = client.get(f"/report/{result.run_id}")
    assert report.status_code == 200 and 'id="timeline"' in report.text


async def test_a_transcript_shows_what_the_model_said_beside_its_tool_calls(
    tmp_path: Path,
) -> None:
    def answer(request: Any) -> Any:
        if not any(m.role == "assistant" for m in request.messages):
            call = ToolCall("c1", "measure", '{"river": "Nile"}')
            return ModelResponse("Let me <measure> it first.", tool_calls=(call,))
        return "The Nile is 6,650 km long."

    result = await run(survey, river="Nile", model=FunctionModel(answer), runs_root=tmp_path)
    text = _client(tmp_path).get(f"/run/{result.run_id}").text
    said = text.index("Let me &lt;measure&gt; it first.")  # the words, escaped, from the journal
    assert "model call 1: the model said" in text
    assert text.index("model call 1 (turn)") < said < text.index("measure(c1)")
    assert "<measure>" not in text


async def test_only_what_the_folder_holds_is_served(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    result = await _run(runs)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "events.jsonl").write_bytes((runs / result.run_id / "events.jsonl").read_bytes())
    (runs / "linked").symlink_to(outside, target_is_directory=True)
    client = _client(runs)
    assert "linked" not in client.get("/").text  # a symbolic link is not followed
    for path in ("/run/linked", "/run/../elsewhere", "/run/%2e%2e/elsewhere", "/run/.",
                 f"/experiment/{result.run_id}", "/report/nothing"):  # fmt: skip
        assert client.get(path).status_code == 404, path
    rebound = client.get("/", headers={"Host": "attacker.example"})
    assert rebound.status_code == 400  # a name rebound to the loopback is refused


async def test_hostile_text_in_a_log_stays_text(tmp_path: Path) -> None:
    evil = "</pre><script>alert(1)</script><img src=x onerror=alert(2)>"
    result = await _run(tmp_path / "runs", river=evil.replace('"', "'"))
    text = _client(tmp_path / "runs").get(f"/run/{result.run_id}").text
    assert "<script>alert(1)" not in text and "<img src=x" not in text
    assert "&lt;script&gt;alert(1)" in text


async def test_what_is_secret_where_the_page_is_read_is_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-live-VIEWSECRET-0123456789"
    result = await _run(tmp_path / "runs", river=secret)
    monkeypatch.setenv("VIEWER_API_KEY", secret)
    client = _client(tmp_path / "runs")
    for path in ("/", f"/run/{result.run_id}", f"/fragment/run/{result.run_id}"):
        body = client.get(path).text
        assert secret not in body, path
    assert "[redacted]" in client.get(f"/run/{result.run_id}").text


def test_a_folder_that_is_not_one_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", str(tmp_path / "missing"), "--no-open"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a folder" in err


def test_without_the_view_extra_it_says_how_to_install_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m.startswith("swarmflow.view")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # an import of it fails
    assert main(["view", str(tmp_path), "--no-open"]) == 2
    assert capsys.readouterr().err == (
        "swarmflow view needs the view extra: pip install 'swarmflow[view]'\n"
    )


def test_the_command_prints_its_url_serves_it_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    result = run_sync(
        survey, river="Nile", model=FunctionModel(_policy()), runs_root=tmp_path / "runs"
    )
    child = subprocess.Popen(
        [sys.executable, "-m", "swarmflow.cli", "view", str(tmp_path / "runs"), "--no-open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        url = line.split(": ", 1)[1].split(" ")[0]
        assert url.startswith("http://127.0.0.1:"), line
        assert result.run_id in httpx.get(url, timeout=10).text
    finally:
        child.send_signal(signal.SIGINT)
        _out, err = child.communicate(timeout=20)
    assert "Traceback" not in err


async def test_a_fifo_or_a_folder_where_a_log_should_be_is_passed_over(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    result = await _run(runs)
    (runs / "fifo-run").mkdir()
    os.mkfifo(runs / "fifo-run" / "events.jsonl")  # a read of it would wait for a writer
    (runs / "folder-run" / "events.jsonl").mkdir(parents=True)
    client = _client(runs)
    index = client.get("/").text
    assert f'href="/run/{result.run_id}"' in index
    assert "fifo-run" not in index and "folder-run" not in index
    assert client.get("/run/fifo-run").status_code == 404


def test_an_experiment_that_is_still_running_shows_its_progress_and_who_is_at_work(
    tmp_path: Path,
) -> None:
    import json
    import shutil

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "exp"
    argv = ["experiment", "run", f"{root}/examples/experiments/experiment.py:EXPERIMENT",
            "--demo", "--out", str(out), "--tasks", "1", "--repeats", "1"]  # fmt: skip
    assert main(argv) == 0
    # Put one run back to where it was mid-way: its log before its sessions ended, no grade.
    log = out / "arms" / "workflow" / "runs" / "median-r1" / "events.jsonl"
    lines = log.read_text().splitlines()
    first_end = next(i for i, line in enumerate(lines) if '"session_ended"' in line)
    log.write_text("\n".join(lines[:first_end]) + "\n")
    # ... and one of its sessions at work with a model call in flight (its start journaled).
    begun = next(json.loads(x) for x in lines if '"session_started"' in x)
    key = {"branch": begun["branch"], "agent": begun["agent"], "purpose": "turn", "digest": "d"}
    with (log.parent / "journal.jsonl").open("a") as journal:
        journal.write(json.dumps({"kind": "model_call_started", "key": key}) + "\n")
    grades = (out / "grades.jsonl").read_text().splitlines()
    kept = [g for g in grades if json.loads(g)["arm"] != "workflow"]
    (out / "grades.jsonl").write_text("\n".join(kept) + "\n")
    shutil.rmtree(out / "arms" / "team-optional" / "runs")  # an arm not started yet
    client = _client(out)
    page = client.get("/experiment/~").text
    assert '<tr data-arm="workflow">' in page
    fragment = client.get("/fragment/experiment/~").json()
    assert fragment["live"] is True
    progress = fragment["html"]["progress"]
    row = progress.split('<tr data-arm="workflow">', 1)[1].split("</tr>", 1)[0]
    cells = [c.split("</td>")[0] for c in row.split("<td>")[2:8]]
    assert cells == ["1", "1", "1", "0", "0", "0"]  # runs, started, running, finished, graded,
    # resolved
    assert '<td class="calls">1</td>' in row  # calls in flight
    assert "calling the model (1)" in fragment["html"]["working"]
    assert "At work now" in fragment["html"]["working"]
    assert "arms/workflow/runs/median-r1" in fragment["html"]["working"]
    assert "once every run is graded" in fragment["html"]["report"]
    cell = fragment["html"]["cells"].split('data-arm="team-optional"', 1)[1]
    assert "not started" in cell.split("</td>", 1)[0]
