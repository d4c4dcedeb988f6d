"""The experience store attacked: a forged store that would hang every query, a FIFO where
the store should be, and a reflection that echoes a secret (the store is a sink: the secret
is never written, never printed, never offered)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from swarmflow import Agent, agent
from swarmflow.cli import main
from swarmflow.core import reading
from swarmflow.core.messages import ModelRequest
from swarmflow.experience.reflect import REFLECT_PROMPT
from swarmflow.harnesses import Harness
from swarmflow.testing import FunctionModel
from tests.harnesses.programs import command
from tests.runtime.helpers import run_one
from tests.support.git_repo import make_repo

PROMPTLY = 120
"""Seconds a command may take to refuse a bad store: far more than it needs; a hang fails it."""
SECRET = "sk-live-9f8e7d6c5b4a39281706"


def _forge_recursive(path: Path) -> None:
    """A store whose meta says it is one, and whose `notes` is a view that never ends."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('format', 'swarmflow-experience-1')")
        conn.execute("CREATE VIRTUAL TABLE notes_fts USING fts5(text, task)")
        conn.execute(
            "CREATE VIEW notes AS WITH RECURSIVE r(id) AS (SELECT 1 UNION ALL SELECT id + 1 "
            "FROM r) SELECT id, 'a' AS agent, 'note' AS kind, 't' AS text, 't' AS task, "
            "'' AS repository, '' AS run_id, 0.0 AS created FROM r"
        )


def _holds(folder: Path, text: str) -> list[Path]:
    """The store's files (its write-ahead log included) that hold `text`."""
    return [p for p in folder.glob("experience.db*") if text.encode() in p.read_bytes()]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "swarmflow.cli", *args], capture_output=True,
                          text=True, timeout=PROMPTLY, check=False)  # fmt: skip


def test_a_store_whose_notes_recurse_forever_is_one_line(tmp_path: Path) -> None:
    forged = tmp_path / "forged.db"
    _forge_recursive(forged)
    done = _cli("experience", "--store", str(forged), "list")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and str(forged) in done.stderr


def test_a_fifo_where_the_store_should_be_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "experience.db"
    os.mkfifo(fifo)
    opening = (
        f"from swarmflow.experience.store import ExperienceStore; ExperienceStore({str(fifo)!r})"
    )
    done = subprocess.run([sys.executable, "-c", opening], capture_output=True, text=True,
                          timeout=PROMPTLY, check=False)  # fmt: skip
    assert "ExperienceError" in done.stderr
    assert "must be a regular file, not a FIFO" in done.stderr


def test_every_query_of_a_store_connection_is_bounded_in_time() -> None:
    conn = sqlite3.connect(":memory:")
    reading.bound_queries(conn, seconds=0.05)
    never_ends = (
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT max(i) FROM r"
    )
    with pytest.raises(sqlite3.OperationalError, match="interrupted"):
        conn.execute(never_ends).fetchone()


async def test_a_reflection_echoing_a_secret_is_stored_and_printed_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", SECRET)
    store = tmp_path / "experience.db"

    def policy(request: ModelRequest) -> str:
        if request.system == REFLECT_PROMPT:
            return f"worked: exporting DEPLOY_TOKEN={SECRET} made the deploy step pass"
        return "deployed"

    coder = Agent("coder", card="You deploy.")
    await run_one([coder], lambda: agent("coder", f"deploy with {SECRET}"),
                  FunctionModel(policy), experience=store)  # fmt: skip
    assert not _holds(tmp_path, SECRET)
    assert main(["experience", "--store", str(store), "list"]) == 0
    listing = capsys.readouterr().out
    assert "[redacted]" in listing and SECRET not in listing


def test_a_secret_already_in_a_store_is_never_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written before the redactor stood in front of it (or by hand) holds the secret
    in clear: the command line's output passes the redactor all the same."""
    monkeypatch.setenv("DEPLOY_TOKEN", SECRET)
    store = tmp_path / "experience.db"
    from swarmflow.experience.store import ExperienceStore

    ExperienceStore(store)
    with sqlite3.connect(store) as conn:
        conn.execute("INSERT INTO notes (agent, kind, text, task, repository, run_id, created) "
                     "VALUES ('coder', 'worked', ?, ?, '', 'r', 0)",
                     (f"token {SECRET} worked", f"task {SECRET}"))  # fmt: skip
    assert main(["experience", "--store", str(store), "list"]) == 0
    assert main(["experience", "--store", str(store), "show", "1"]) == 0
    printed = capsys.readouterr().out
    assert SECRET not in printed and printed.count("[redacted]") >= 3


async def test_a_reflection_echoing_a_harness_key_is_stored_and_listed_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The key a harness's program reaches its model with is made during the run, in no
    environment: the store scrubs it with the run's own redactor."""
    store = tmp_path / "experience.db"
    keys: list[str] = []

    def policy(request: ModelRequest) -> str:
        if request.system == REFLECT_PROMPT:
            return f"worked: the endpoint key {keys[0]} let the program in"
        said = " ".join(m.content or "" for m in request.messages)
        keys.extend(re.findall(r"sfk-[0-9a-f]{48}", said))
        return "in"

    helper = Agent("helper", workspace="local",
                   harness=Harness(command=command("key"), task="stdin"))  # fmt: skip

    async def both() -> str:
        await agent("helper", "go")
        return (await agent("coder", "deploy")).text

    result = await run_one([helper, Agent("coder", card="You deploy.")], both,
                           FunctionModel(policy), experience=store,
                           repo=make_repo(tmp_path))  # fmt: skip
    assert result.status == "ok" and keys
    assert any(e.type == "experience_written" for e in result.events)
    assert not _holds(tmp_path, keys[0])
    assert main(["experience", "--store", str(store), "list"]) == 0
    listing = capsys.readouterr().out
    assert "the endpoint key [redacted] let the program in" in listing
    assert keys[0] not in listing
