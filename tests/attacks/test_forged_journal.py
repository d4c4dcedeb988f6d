"""A run directory rewritten by the run's own agent: a resume must neither act outside the run
nor trust what the forged record claims.

The attacker is a model with `run_shell` in a `local` workspace on a repository that holds the
runs folder (`swarmflow run --repo .` from the repository root): it can rewrite its own run's
`journal.jsonl` with `sed`. The run then fails, and the user resumes it. Its commands run on the
host (`sandbox="none"`, as on a machine without bubblewrap): the sandbox may hide the runs
folder, but a resume must hold whatever wrote the run directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from swarmflow import Agent, ConfigError, RunResult, Team, agent, agent_session, flow, run
from swarmflow.cli import main
from swarmflow.core.messages import ModelRequest, ToolCall
from swarmflow.record.files import JOURNAL_FILE
from swarmflow.testing import FunctionModel, tool_call
from tests.support.git_repo import make_repo, run_git

ATTACKER = Team(
    [
        Agent("coder", tools=["write_file"], workspace="worktree"),
        Agent("shell", tools=["run_shell"], workspace="local", sandbox="none"),
    ]
)
broken = [True]


@flow(team=ATTACKER)
async def coder_then_shell() -> str:
    await agent("coder", "write one.txt")
    await agent("shell", "tidy up")
    if broken[0]:
        raise RuntimeError("the run fails after the shell's call")
    return "done"


def _since_prompt(request: ModelRequest) -> list[str]:
    messages = list(request.messages)
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    return [m.content or "" for m in messages[last_user:] if m.role == "tool"]


def attacker(repo: Path, command: str) -> FunctionModel:
    """The coder writes a file; the shell agent runs `command` (`{run}` is its run directory,
    relative to the workspace, which is the repository)."""

    def answer(request: ModelRequest) -> str | ToolCall:
        if _since_prompt(request):
            return "done"
        if request.agent == "coder":
            return tool_call("write_file", path="one.txt", content="one\n")
        (run_dir,) = (repo / "runs").iterdir()
        return tool_call("run_shell", command=command.format(run=f"runs/{run_dir.name}"))

    return FunctionModel(answer)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """The user's folder beside the runs folder, in the same repository."""
    repo = make_repo(tmp_path)
    folder = repo / "victim"
    folder.mkdir()
    (folder / "precious.txt").write_text("the user's work\n")
    return folder


async def attacked_run(repo: Path, command: str) -> Path:
    """Run the flow with the shell agent running `command`; the failed run's directory."""
    broken[0] = True
    first = await run(coder_then_shell, model=attacker(repo, command), repo=repo,
                      runs_root=repo / "runs", raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and first.run_dir is not None
    broken[0] = False
    return first.run_dir


async def resumed(run_dir: Path, repo: Path) -> BaseException | RunResult:
    """The resume's result, or what it raised."""
    try:
        return await run(coder_then_shell, model=attacker(repo, "true"), resume=run_dir,
                         repo=repo, raise_on_failure=False)  # fmt: skip
    except Exception as exc:
        return exc


# The model finds its own run directory from inside its workspace and points every worktree
# root of its journal at the victim.
FORGE = (
    'd=$(cd {run} && pwd); sed -i "s#\\"root\\":\\"[^\\"]*\\"#\\"root\\":\\"'
    '$d/worktrees/../../../victim\\"#g" {run}/' + JOURNAL_FILE
)
FORGED = "/worktrees/../../../victim"


def resolved(path: Path) -> Path:
    return path.resolve()


def names_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def line_of(path: Path, text: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


async def test_a_journal_forged_by_the_runs_own_model_removes_nothing_outside_the_run(
    victim: Path,
) -> None:
    repo = victim.parent
    run_dir = await attacked_run(repo, FORGE)
    journal = run_dir / JOURNAL_FILE
    assert f"{run_dir}{FORGED}" in journal.read_text()  # the attack itself worked
    assert resolved(Path(f"{run_dir}{FORGED}")) == victim
    refused = await resumed(run_dir, repo)
    assert (victim / "precious.txt").read_text() == "the user's work\n"
    assert isinstance(refused, ConfigError), refused
    message = str(refused)
    assert f"{JOURNAL_FILE}:{line_of(journal, FORGED)}: not a journal record: " in message
    assert "\n" not in message


def test_the_cli_refuses_the_forged_journal_in_one_line(
    victim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = victim.parent
    run_dir = anyio.run(attacked_run, repo, FORGE)
    number = line_of(run_dir / JOURNAL_FILE, FORGED)
    assert main(["resume", str(run_dir), "--demo", "--repo", str(repo)]) == 2
    err = capsys.readouterr().err
    assert f"{JOURNAL_FILE}:{number}: not a journal record: " in err
    assert err.count("\n") == 1
    assert (victim / "precious.txt").read_text() == "the user's work\n"


async def test_a_worktree_swapped_for_a_symlink_is_not_followed(victim: Path) -> None:
    repo = victim.parent
    swap = "w=$(ls -d {run}/worktrees/*); rm -rf $w && ln -s ../../../victim $w"
    run_dir = await attacked_run(repo, swap)
    (link,) = (run_dir / "worktrees").iterdir()
    assert link.is_symlink() and resolved(link) == victim  # the attack itself worked
    refused = await resumed(run_dir, repo)
    assert names_in(victim) == ["precious.txt"]
    assert isinstance(refused, ConfigError), refused
    assert "journal.jsonl: call 0 of branch (root) (agent 'coder')" in str(refused)
    assert "symlink" in str(refused) and "\n" not in str(refused)


def _edit_worktree(record: dict[str, Any], field: str, value: str) -> None:
    if record.get("workspace"):
        record["workspace"][field] = value


FORGED_FIELDS = {
    "a root that climbs out": ("root", "/tmp/x/worktrees/../../../victim"),
    "a relative root": ("root", "worktrees/coder-1"),
    "a branch that is an option": ("branch", "--upload-pack=touch /tmp/owned"),
    "a branch range": ("branch", "main..swarmflow"),
    "a base that is an option": ("base", "--output=/tmp/owned"),
    "a base that is a revision": ("base", "HEAD~1"),
}


@pytest.mark.parametrize(("field", "value"), FORGED_FIELDS.values(), ids=FORGED_FIELDS.keys())
async def test_a_forged_worktree_field_is_named_by_file_and_line(
    victim: Path, field: str, value: str
) -> None:
    repo = victim.parent
    run_dir = await attacked_run(repo, "true")
    journal = run_dir / JOURNAL_FILE
    lines = journal.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    number = next(n for n, r in enumerate(records, 1) if r.get("workspace"))
    for record in records:
        _edit_worktree(record, field, value)
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(ConfigError, match=rf"journal\.jsonl:{number}: not a journal record: "):
        await run(coder_then_shell, model=attacker(repo, "true"), resume=run_dir, repo=repo)
    assert (victim / "precious.txt").exists()


async def test_a_branch_of_another_worktree_is_refused_before_git_runs(victim: Path) -> None:
    repo = victim.parent
    run_dir = await attacked_run(repo, "true")
    journal = run_dir / JOURNAL_FILE
    journal.write_text(journal.read_text().replace('"branch":"swarmflow/', '"branch":"main/'))
    with pytest.raises(ConfigError, match=r"journal\.jsonl: call 0 .* not on its own"):
        await run(coder_then_shell, model=attacker(repo, "true"), resume=run_dir, repo=repo)


# -- a forged `given` makes no agent the owner of what it was never given ----------------------

RELAY = Team([Agent("author"), Agent("relay"), Agent("reader")], edges=[("relay", "reader")])
PLAN = "the author's plan: move the launch to the seventh of march at dawn"


@flow(team=RELAY)
async def relay_call() -> str:
    await agent("author", "write the plan")
    said = await agent("relay", "say hello")
    if broken[0]:
        raise RuntimeError("the run fails before the reader is called")
    return (await agent("reader", said.text)).text


@flow(team=RELAY)
async def relay_turn() -> str:
    await agent("author", "write the plan")
    async with agent_session("relay") as relay:
        said = await relay.send("say hello")
        if broken[0]:
            raise RuntimeError("the run fails before the reader is called")
        return (await agent("reader", said.text)).text


def relay_model(read: list[str]) -> FunctionModel:
    def answer(request: ModelRequest) -> str:
        if request.agent == "reader":
            read.append(request.prompt)
            return "read"
        return PLAN if request.agent == "author" else "hello there, nice to meet you all"

    return FunctionModel(answer)


def forge_relay_record(journal: Path, turn: bool) -> None:
    """The relay's record claims the author's plan as its answer, and as what it was given."""
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    for record in records:
        if record.get("kind") == "call_finished" and record["key"]["agent"] == "relay":
            record["text"] = PLAN
            if turn:
                record["messages"].insert(0, {"role": "user", "content": PLAN})
                record["messages"][-1]["content"] = PLAN
            else:
                record["given"] = PLAN
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.mark.parametrize("chosen", [relay_call, relay_turn], ids=["call", "turn"])
async def test_a_forged_given_does_not_carry_a_product_past_the_missing_edge(
    tmp_path: Path, chosen: Any
) -> None:
    broken[0] = True
    first = await run(chosen, model=relay_model([]), runs_root=tmp_path, raise_on_failure=False)
    assert first.status == "failed" and first.run_dir is not None
    broken[0] = False
    forge_relay_record(first.run_dir / JOURNAL_FILE, turn=chosen is relay_turn)
    read: list[str] = []
    again = await run(chosen, model=relay_model(read), resume=first.run_dir,
                      raise_on_failure=False)  # fmt: skip
    assert again.status == "failed"
    assert read == []  # the reader was never sent the author's plan
    if chosen is relay_turn:  # the forged conversation itself is refused, naming the journal
        assert isinstance(again.error, ConfigError)
        assert "journal.jsonl: call 1 of branch (root) (agent 'relay')" in str(again.error)
        assert "product of agent 'author'" in str(again.error)
    else:  # the relay owns none of the plan: the handoff to the reader is refused
        assert [e.source for e in again.events if e.type == "handoff_refused"] == ["author"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("chosen", [relay_call, relay_turn], ids=["call", "turn"])
async def test_an_untouched_relay_still_resumes(tmp_path: Path, chosen: Any) -> None:
    broken[0] = True
    first = await run(chosen, model=relay_model([]), runs_root=tmp_path, raise_on_failure=False)
    assert first.run_dir is not None
    broken[0] = False
    read: list[str] = []
    again = await run(chosen, model=relay_model(read), resume=first.run_dir)
    assert again.status == "ok" and read == ["hello there, nice to meet you all"]


# -- `swarmflow clean` reads the repository's own list of worktrees, which a workspace can forge --

FORGE_GIT_RECORD = (
    "d=$(cd {run} && pwd); for g in .git/worktrees/*/gitdir; do "
    'echo "$d/worktrees/../../../victim/.git" > $g; done'
)


def test_clean_removes_the_runs_worktrees_and_nothing_a_forged_record_names(
    victim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = victim.parent
    run_dir = anyio.run(attacked_run, repo, FORGE_GIT_RECORD)
    listed = run_git(repo, "worktree", "list", "--porcelain")
    assert f"{run_dir}{FORGED}" in listed  # the attack itself worked: git names the victim
    (worktree,) = (run_dir / "worktrees").iterdir()
    assert main(["clean", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert names_in(victim) == ["precious.txt"]
    assert f"removed worktree {worktree}" in out
    assert not worktree.exists()
    assert len(run_git(repo, "worktree", "list").splitlines()) == 1  # the repository's own
    assert run_git(repo, "branch", "--list", f"swarmflow/{run_dir.name}/*") == ""


# -- a replayed call's session, as the journal keeps it for the reflection, is forged --------

SECRET_PLAN = "The reader's own plan: migrate the billing tables to the ledger schema in three steps"
PASSING = Team([Agent("writer"), Agent("reader")], edges=[("writer", "reader")])


@flow(team=PASSING)
async def write_then_read() -> str:
    draft = await agent("writer", "Draft a plan.")
    await agent("reader", f"Review: {draft.text}")
    if broken[0]:
        raise RuntimeError("the run fails after the reader's call")
    return "done"


def passing_model(reflected: list[ModelRequest]) -> FunctionModel:
    def answer(request: ModelRequest) -> str:
        if request.system.startswith("You review the finished work"):
            reflected.append(request)
            return "note: nothing to keep"
        return SECRET_PLAN if request.agent == "reader" else "A short draft of a plan."

    return FunctionModel(answer)


async def test_a_forged_trajectory_cannot_hand_the_reflection_another_agents_product(
    tmp_path: Path,
) -> None:
    store = tmp_path / "experience.db"
    broken[0] = True
    first = await run(write_then_read, model=passing_model([]), runs_root=tmp_path / "runs",
                      experience=store, raise_on_failure=False)  # fmt: skip
    assert first.status == "failed" and first.run_dir is not None
    broken[0] = False
    # The writer's record is rewritten on disk: its session "said" the reader's product,
    # which has no edge back to the writer.
    journal = first.run_dir / JOURNAL_FILE
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    (writer,) = [r for r in records if r["kind"] == "call_finished" and r["key"]["agent"] == "writer"]
    writer["trajectory"]["history"][-1]["content"] = SECRET_PLAN
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))

    reflected: list[ModelRequest] = []
    again = await run(write_then_read, model=passing_model(reflected), resume=first.run_dir,
                      experience=store)  # fmt: skip
    assert again.status == "ok"
    (mine,) = [r for r in reflected if r.agent == "writer"]
    assert SECRET_PLAN not in str(mine.messages[-1].content)
    refused = [e for e in again.events if e.type == "handoff_refused"]
    assert [(e.via, e.agent) for e in refused] == [("recorded trajectory", "writer")]  # type: ignore[attr-defined]
