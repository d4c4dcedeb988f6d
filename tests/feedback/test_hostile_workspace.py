"""The language-server feed attacked by the workspace it reads: a command leaves a link to a
host file and a FIFO among the files the servers check. swarmflow reads the workspace
through the safe-path layer, so neither the host file's content reaches a server (and from
it the model's diagnostics) nor does the FIFO stop the session."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow import agent
from swarmflow.testing import ScriptedModel, tool_call
from tests.feedback.lsp_support import coder, evidence_of, language_servers_left
from tests.runtime.helpers import run_one

HOST_NAME = "host_only_name_7c2e"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    (path / "a.py").write_text("def f():\n    return 1\n")
    (tmp_path / "host.py").write_text(f"def g():\n    return {HOST_NAME}\n")
    return path


async def test_a_link_to_the_host_and_a_fifo_are_not_fed_to_the_servers(repo: Path) -> None:
    host = repo.parent / "host.py"
    command = f"ln -s {host} leak.py && mkfifo pipe.py && printf 'x = missing_1\\n' > b.py"
    model = ScriptedModel(
        [
            tool_call("edit", path="a.py", old="return 1", new="return 2"),
            tool_call("run_shell", command=command),
            "done",
        ]
    )
    result = await run_one(
        [coder()], lambda: agent("coder", "go"), model, repo=repo, budget={"seconds": 60}
    )
    assert result.status == "ok"
    seen = evidence_of(model.requests[2])
    assert "missing_1" in seen  # the regular file is checked
    assert HOST_NAME not in seen
    assert all(HOST_NAME not in (m.content or "") for m in model.requests[2].messages)
    assert language_servers_left() == []
