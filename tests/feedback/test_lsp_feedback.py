"""Diagnostics from a real `ruff server`: only what an edit introduced, at the next step."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from swarmflow import agent
from swarmflow.report import render_report
from swarmflow.testing import FunctionModel, ScriptedModel, tool_call
from tests.feedback.lsp_support import (
    coder,
    evidence_of,
    language_servers,
    language_servers_left,
)
from tests.runtime.helpers import of_type, run_one

OLD = "import os\n\n\ndef f():\n    return 1\n"
"""A file with a diagnostic of its own (F401: `os` unused) before any edit."""
BROKEN = "return undefined_name"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text(OLD)
    return tmp_path


async def test_a_broken_edit_gets_exactly_its_diagnostic_and_the_fix_none(repo: Path) -> None:
    model = ScriptedModel(
        [
            tool_call("edit", path="a.py", old="return 1", new=BROKEN),
            tool_call("edit", path="a.py", old=BROKEN, new="return 2"),
            "done",
        ]
    )
    result = await run_one([coder()], lambda: agent("coder", "go"), model, repo=repo)
    assert result.status == "ok"
    after_break, after_fix = evidence_of(model.requests[1]), evidence_of(model.requests[2])
    assert "F821" in after_break and "undefined_name" in after_break
    assert "F401" not in after_break  # there before the edit: never posted
    assert after_fix == ""
    posted = of_type(result, "diagnostics_posted")
    assert [(e.server, e.codes, e.files) for e in posted] == [("ruff", ["F821"], ["a.py"])]
    delivered = of_type(result, "evidence_delivered")
    assert [(e.source, e.step) for e in delivered] == [("diagnostics", 2)]
    checked = of_type(result, "feedback_checked")
    assert len(checked) == 2 and all(e.seconds > 0 for e in checked)
    assert language_servers_left() == []
    report = render_report(result.events, result.run_dir)  # what it was told, and when
    assert "Evidence between steps\ncoder: 1 diagnostics\n" in report
    assert "before step 2  [diagnostics] ruff found 1 new problem(s) after your edit:" in report
    assert "language servers: 2 passes" in report


async def test_a_command_that_breaks_a_file_is_checked_too(repo: Path) -> None:
    command = "printf 'def g():\\n    return missing\\n' >> a.py"
    model = ScriptedModel(
        [
            tool_call("edit", path="a.py", old="return 1", new="return 1  # seen"),
            tool_call("run_shell", command=command),
            "done",
        ]
    )
    result = await run_one([coder()], lambda: agent("coder", "go"), model, repo=repo)
    assert result.status == "ok"
    assert "F821" in evidence_of(model.requests[2]) and "missing" in evidence_of(model.requests[2])
    assert evidence_of(model.requests[1]) == ""


async def test_a_server_that_is_not_installed_is_one_warning_not_a_failure(
    repo: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedModel(
        [
            tool_call("edit", path="a.py", old="return 1", new=BROKEN),
            tool_call("edit", path="a.py", old=BROKEN, new="return 3"),
            "done",
        ]
    )
    result = await run_one(
        [coder(servers=["pylsp_not_here", "ruff"])], lambda: agent("coder", "go"), model, repo=repo
    )
    assert result.status == "ok"
    unavailable = of_type(result, "feedback_unavailable")
    assert [e.server for e in unavailable] == ["pylsp_not_here"]
    assert "no language server named 'pylsp_not_here'" in unavailable[0].reason
    assert sum("unavailable" in r.getMessage() for r in caplog.records) == 1
    assert "F821" in evidence_of(model.requests[1])  # the other server still works


async def test_the_server_is_gone_after_a_failed_run(repo: Path) -> None:
    def policy(request: object) -> object:
        if len(model.requests) == 1:
            return tool_call("edit", path="a.py", old="return 1", new=BROKEN)
        raise RuntimeError("the model broke")

    model = FunctionModel(policy)
    result = await run_one([coder()], lambda: agent("coder", "go"), model, repo=repo)
    assert result.status == "failed"
    assert of_type(result, "feedback_checked")  # a server did run
    assert language_servers_left() == []


async def test_the_server_is_gone_after_a_cancelled_run(repo: Path) -> None:
    checked = anyio.Event()

    async def policy(request: object) -> object:
        if len(model.requests) == 1:
            return tool_call("edit", path="a.py", old="return 1", new=BROKEN)
        checked.set()  # the edit's pass is over: the server is running
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    model = FunctionModel(policy)
    async with anyio.create_task_group() as tg:

        async def go() -> None:
            await run_one([coder()], lambda: agent("coder", "go"), model, repo=repo)

        tg.start_soon(go)
        await checked.wait()
        assert len(language_servers_left()) == 1
        tg.cancel_scope.cancel()
    assert language_servers_left() == []


async def test_a_server_killed_mid_run_costs_the_feedback_not_the_run(repo: Path) -> None:
    def policy(request: object) -> object:
        step = len(model.requests)
        if step == 1:
            return tool_call("edit", path="a.py", old="return 1", new="return 2")
        if step == 2:
            for pid, _ in language_servers():
                os.kill(pid, signal.SIGKILL)
            return tool_call("edit", path="a.py", old="return 2", new=BROKEN)
        if step == 3:
            return tool_call("edit", path="a.py", old=BROKEN, new="return 4")
        return "done"

    model = FunctionModel(policy)
    result = await run_one([coder(wait=1.0)], lambda: agent("coder", "go"), model, repo=repo)
    assert result.status == "ok", result.error
    assert (repo / "a.py").read_text().endswith("return 4\n")  # every edit was made
    assert language_servers_left() == []
