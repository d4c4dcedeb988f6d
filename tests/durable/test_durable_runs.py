"""Durable runs: a run killed with SIGKILL resumes, replaying every call that had finished."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from swarmflow import Agent, Ok, RunResult, Team, agent, agent_session, flow, human, parallel, run
from swarmflow.channels import DeferredHuman, ScriptedHuman
from swarmflow.cli import main
from swarmflow.core.errors import ConfigError, ModelUnavailable, ResumeDiverged
from swarmflow.core.messages import ModelRequest
from swarmflow.record.events import EventBase, parse_event
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.record.records import JOURNAL_VERSION
from swarmflow.runtime.flow import Flow
from swarmflow.testing import FunctionModel
from tests.durable import kill_target
from tests.support.kill import kill_when_ready

ROOT = Path(__file__).resolve().parents[2]


def kill_mid_run(root: Path, hang_at: int, *mode: str) -> Path:
    """Run kill_target.py in a child and SIGKILL it at its `hang_at`-th model call."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    target = Path(kill_target.__file__)
    kill_when_ready([sys.executable, str(target), str(root), str(hang_at), *mode], env)
    (run_dir,) = root.iterdir()
    return run_dir


def finished_prompts(run_dir: Path) -> set[str]:
    """The prompts of the calls the journal records as finished (the digest's input)."""
    lines = (run_dir / JOURNAL_FILE).read_bytes().splitlines()
    records = [json.loads(line) for line in lines]
    return {r["given"] for r in records if r["kind"] == "call_finished"}


def all_prompts(root: Path, chosen: Flow[..., object] = kill_target.busy) -> set[str]:
    """Every prompt an uninterrupted run sends."""
    seen: set[str] = set()

    def record(req: ModelRequest) -> str:
        seen.add(req.messages[-1].content or "")
        return kill_target.answer(req)

    result = kill_target_run_sync(FunctionModel(record), chosen, runs_root=root)
    assert result.status == "ok"
    return seen


def kill_target_run_sync(
    model: FunctionModel, chosen: Flow[..., object] = kill_target.busy, **kwargs: Any
) -> RunResult:
    import anyio

    result: RunResult = anyio.run(lambda: run(chosen, model=model, **kwargs))
    return result


def read_log(run_dir: Path) -> list[EventBase]:
    raw = (run_dir / EVENTS_FILE).read_bytes()
    assert raw.endswith(b"\n")
    return [parse_event(line) for line in raw.splitlines()]


@pytest.mark.parametrize("mode", ["python", "swarm"])
def test_a_killed_run_resumes_and_pays_only_for_unfinished_calls(tmp_path: Path, mode: str) -> None:
    chosen = kill_target.swarm_flow() if mode == "swarm" else kill_target.busy
    run_dir = kill_mid_run(tmp_path / "runs", 17, *(["swarm"] if mode == "swarm" else []))
    done = finished_prompts(run_dir)
    before = read_log(run_dir)
    every = all_prompts(tmp_path / "all", chosen)
    assert 8 <= len(done) < len(every)  # the kill came mid-run
    assert not any(e.type == "run_finished" for e in before)

    asked: list[str] = []

    def counting(req: ModelRequest) -> str:
        asked.append(req.messages[-1].content or "")
        return kill_target.answer(req)

    resumed = kill_target_run_sync(FunctionModel(counting), chosen, resume=run_dir)
    reference = kill_target_run_sync(
        FunctionModel(kill_target.answer), chosen, runs_root=tmp_path / "reference"
    )
    assert resumed.status == "ok"
    assert resumed.output == reference.output
    # Exactly the calls that had not finished went to the model, each once.
    assert sorted(asked) == sorted(every - done)
    assert len(asked) == len(set(asked))

    log = read_log(run_dir)
    assert [e.seq for e in log] == list(range(len(log)))
    assert {e.run_id for e in log} == {resumed.run_id}
    assert [e.type for e in log].count("run_started") == 1
    assert [e.type for e in log].count("run_resumed") == 1
    assert [e.type for e in log].count("call_replayed") == len(done)
    assert log[-1].type == "run_finished"
    # The resumed run's ledger counts what the killed process spent, too.
    finished = log[-1]
    orphans = len(before_calls(before)) - len(done)  # answered, but killed before recorded
    assert finished.calls == len(every) + orphans  # type: ignore[attr-defined]


def before_calls(events: list[EventBase]) -> list[EventBase]:
    return [e for e in events if e.type == "model_called"]


# -- a person's answer is bound to what was shown --------------------------------------------


DRAFTS = Team([Agent("drafter")], edges=[("drafter", "human")])


@flow(team=DRAFTS)
async def ship(task: str) -> object:
    draft = await agent("drafter", f"draft: {task}")
    return await human("Ship this draft?", payload=draft.text)


def drafting(version: list[int], asked: list[str]) -> FunctionModel:
    """A drafter whose draft is the version it is told to write: a real model answers anew."""

    def policy(req: ModelRequest) -> str:
        asked.append(req.messages[-1].content or "")
        return f"draft v{version[0]}: add a unit test"

    return FunctionModel(policy)


async def test_resume_after_a_deferred_question_repeats_no_model_call(tmp_path: Path) -> None:
    asked: list[str] = []
    first = await run(ship, model=drafting([1], asked), human=DeferredHuman(), runs_root=tmp_path,
                      task="notes")  # fmt: skip
    assert first.status == "paused" and len(asked) == 1
    assert f"swarmflow resume {first.run_dir} --answer {first.pause_token}=VALUE" in str(
        first.error
    )
    resumed = await run(
        ship,
        model=drafting([2], asked),  # would write another draft, if it were asked again
        human=DeferredHuman({first.pause_token: "yes"}),
        resume=first.run_dir,
    )
    assert resumed.status == "ok" and resumed.output == "yes"
    assert len(asked) == 1  # the draft the person saw was replayed, not written again
    requested = [e for e in resumed.events if e.type == "human_requested"]
    assert requested[-1].payload == "draft v1: add a unit test"  # type: ignore[attr-defined]


async def test_an_answer_never_applies_to_a_payload_it_was_not_given_for(tmp_path: Path) -> None:
    asked: list[str] = []
    first = await run(ship, model=drafting([1], asked), human=DeferredHuman(), runs_root=tmp_path,
                      task="notes")  # fmt: skip
    assert first.pause_token
    # The draft's journal records (its call's and its model call's) are lost (as when the run
    # died before they were written): the drafter runs again and writes v2. The "yes" given
    # for v1 must not ship v2.
    journal = first.run_dir / JOURNAL_FILE
    kept = [ln for ln in journal.read_text().splitlines() if 'call_finished"' not in ln]
    journal.write_text("\n".join(kept) + "\n")
    again = await run(
        ship,
        model=drafting([2], asked),
        human=DeferredHuman({first.pause_token: "yes"}),
        resume=first.run_dir,
    )
    assert again.status == "paused" and again.pause_token != first.pause_token
    requested = [e for e in again.events if e.type == "human_requested"]
    assert requested[-1].payload == "draft v2: add a unit test"  # type: ignore[attr-defined]
    final = await run(
        ship,
        model=drafting([3], asked),
        human=DeferredHuman({again.pause_token: "ship v2"}),
        resume=first.run_dir,
    )
    assert final.output == "ship v2" and len(asked) == 2


async def test_an_answer_is_recorded_once_as_its_event_with_its_token(tmp_path: Path) -> None:
    first = await run(ship, model=drafting([1], []), human=DeferredHuman(), runs_root=tmp_path,
                      task="notes")  # fmt: skip
    done = await run(ship, model=drafting([1], []), human=DeferredHuman({first.pause_token: "yes"}),
                     resume=first.run_dir)  # fmt: skip
    assert done.output == "yes"
    (answered,) = [e for e in read_log(first.run_dir) if e.type == "human_answered"]
    assert answered.token == first.pause_token  # type: ignore[attr-defined]
    journal = (first.run_dir / JOURNAL_FILE).read_text()
    assert '"yes"' not in journal and "human_answered" not in journal


async def test_a_recorded_answer_is_not_asked_again(tmp_path: Path) -> None:
    @flow(team=DRAFTS)
    async def twice(task: str) -> object:
        first = await human("First?", payload=task)
        draft = await agent("drafter", f"draft after {first}")
        return await human("Second?", payload=draft.text)

    asked: list[str] = []
    scripted = ScriptedHuman(["one"])
    paused = await run(twice, model=drafting([1], asked), human=DeferredHuman({}),
                       runs_root=tmp_path, task="t")  # fmt: skip
    assert paused.status == "paused"
    second = await run(
        twice,
        model=drafting([1], asked),
        human=scripted,
        resume=paused.run_dir,
        raise_on_failure=False,
    )
    assert second.status == "failed"  # the scripted person has one answer, for "First?"
    done = await run(
        twice, model=drafting([1], asked), human=ScriptedHuman(["two"]), resume=paused.run_dir
    )
    assert done.status == "ok" and done.output == "two"  # "First?" came from the journal
    assert len(asked) == 1


# -- a flow edited between the runs ------------------------------------------------------------


def _chain(prompts: list[str]) -> Flow[..., object]:
    @flow(team=Team([Agent("w")]))
    async def chain() -> object:
        out = []
        for prompt in prompts:
            out.append((await agent("w", prompt)).text)
        return out

    return chain


async def test_an_edited_flow_diverges_at_the_first_call_that_changed(tmp_path: Path) -> None:
    asked: list[str] = []
    model = FunctionModel(lambda req: asked.append(req.messages[-1].content or "") or "ok")
    first = await run(_chain(["a", "b", "c", "d"]), model=model, runs_root=tmp_path)
    assert first.status == "ok" and len(asked) == 4
    forget_the_end(first.run_dir)
    asked.clear()
    edited = await run(_chain(["a", "B", "c", "d"]), model=model, resume=first.run_dir)
    assert edited.status == "ok"
    assert asked == ["B", "c", "d"]  # from the changed call on, every call runs
    (diverged,) = [e for e in edited.events if e.type == "resume_diverged"]
    assert (diverged.branch, diverged.index, diverged.agent) == ("", 1, "w")  # type: ignore[attr-defined]
    assert [e.type for e in edited.events].count("call_replayed") == 1
    # The budget counts every call ever paid for: 4 in the first run, 3 in the resumed one.
    finished = [e for e in edited.events if e.type == "run_finished"][-1]
    assert finished.calls == 7  # type: ignore[attr-defined]


CHAIN = """\
flow chain() -> any
agent w {{}}
steps {{
  a = w("first")
  b = w("{second} after {{a}}")
  return b
}}
"""


def test_the_cli_reports_the_divergence_and_strict_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow_file = tmp_path / "chain.swarm"
    flow_file.write_text(CHAIN.format(second="second"))
    assert main(["run", str(flow_file), "--demo"]) == 0
    events = re.search(r"events: (\S+)", capsys.readouterr().out)
    assert events is not None
    run_dir = Path(events.group(1)).parent
    forget_the_end(run_dir)
    flow_file.write_text(CHAIN.format(second="SECOND"))
    assert main(["resume", str(run_dir), "--demo", "--strict"]) == 1
    refused = capsys.readouterr().out
    assert "ResumeDiverged" in refused and "call 1 of branch (root)" in refused
    assert main(["resume", str(run_dir), "--demo"]) == 0
    resumed = capsys.readouterr().out
    assert "replayed: 1 finished calls" in resumed
    assert "diverged: call 1 of branch (root) (agent w)" in resumed


async def test_a_strict_resume_refuses_an_edited_flow(tmp_path: Path) -> None:
    model = FunctionModel(lambda req: "ok")
    first = await run(_chain(["a", "b"]), model=model, runs_root=tmp_path)
    forget_the_end(first.run_dir)
    refused = await run(
        _chain(["a", "x"]),
        model=model,
        resume=first.run_dir,
        strict=True,
        raise_on_failure=False,
    )
    assert refused.status == "failed" and isinstance(refused.error, ResumeDiverged)
    assert "call 1 of branch (root)" in str(refused.error)


def forget_the_end(run_dir: Path) -> None:
    """Make a finished run look killed before its end (a finished run is not resumed)."""
    log = run_dir / EVENTS_FILE
    lines = log.read_text().splitlines()
    log.write_text("\n".join(ln for ln in lines if '"run_finished"' not in ln) + "\n")


# -- session turns and sub-flows ----------------------------------------------------------------


class Pick(BaseModel):
    choice: int


@flow(team=Team([Agent("arbiter")]))
async def hear_then_pick() -> object:
    async with agent_session("arbiter") as arbiter:
        await arbiter.send("candidate 0: small")
        await arbiter.send("candidate 1: large")
        return await arbiter.ask("Pick one.", output=Pick)


async def test_a_session_resumes_with_its_replayed_turns_in_its_history(tmp_path: Path) -> None:
    def broken(req: ModelRequest) -> str:
        if "Pick one." in (req.messages[-1].content or ""):
            raise ModelUnavailable("the endpoint went away")
        return "heard"

    failed = await run(
        hear_then_pick, model=FunctionModel(broken), runs_root=tmp_path, raise_on_failure=False
    )
    assert failed.status == "failed"
    seen: list[list[str]] = []

    def working(req: ModelRequest) -> str:
        seen.append([m.content or "" for m in req.messages if m.role != "system"])
        return '{"choice": 0}'

    resumed = await run(hear_then_pick, model=FunctionModel(working), resume=failed.run_dir)
    assert resumed.status == "ok" and resumed.output == Pick(choice=0)
    (request,) = seen  # the two heard turns were replayed; only the question went out
    assert request[:4] == ["candidate 0: small", "heard", "candidate 1: large", "heard"]
    assert request[4].startswith("Pick one.")


@flow(team=Team([Agent("w")]))
async def inner(topic: str) -> str:
    return (await agent("w", f"about {topic}")).text


@flow(team=Team([Agent("w")]))
async def outer() -> list[str]:
    outcomes = await parallel(lambda i: inner(f"topic {i}"), n=3)
    return [o.value for o in outcomes if isinstance(o, Ok)]


async def test_sub_flows_replay_under_the_same_branch_paths(tmp_path: Path) -> None:
    asked: list[str] = []
    outage = [True]  # the first call about topic 2 meets an outage

    def policy(req: ModelRequest) -> str:
        asked.append(req.messages[-1].content or "")
        if asked[-1] == "about topic 2" and outage:
            outage.clear()
            raise ModelUnavailable("down")
        return f"on {req.messages[-1].content}"

    first = await run(outer, model=FunctionModel(policy), runs_root=tmp_path)
    assert first.status == "ok" and len(first.output) == 2  # branch 2 failed: an outcome
    forget_the_end(first.run_dir)
    await run(inner, model=FunctionModel(policy), runs_root=tmp_path / "other", topic="x")
    asked.clear()
    again = await run(outer, model=FunctionModel(policy), resume=first.run_dir)
    assert again.output == ["on about topic 0", "on about topic 1", "on about topic 2"]
    assert asked == ["about topic 2"]


async def test_lines_torn_by_a_power_cut_are_cut_off_on_resume(tmp_path: Path) -> None:
    asked: list[str] = []
    first = await run(ship, model=drafting([1], asked), human=DeferredHuman(), runs_root=tmp_path,
                      task="notes")  # fmt: skip
    for name in (EVENTS_FILE, JOURNAL_FILE):
        with (first.run_dir / name).open("ab") as fh:
            fh.write(b'{"kind": "call_fini')  # a write cut short
    resumed = await run(
        ship,
        model=drafting([2], asked),
        human=DeferredHuman({first.pause_token: "yes"}),
        resume=first.run_dir,
    )
    assert resumed.status == "ok" and len(asked) == 1
    log = read_log(first.run_dir)
    assert [e.seq for e in log] == list(range(len(log)))


# -- run directories of another format --------------------------------------------------------

V1_JOURNAL = [
    {"kind": "journal_opened", "version": 1, "run_id": "old"},
    {"kind": "call_finished", "key": {"branch": "", "index": 0, "agent": "drafter",
     "digest": "0" * 32}, "session": "drafter-1", "text": "draft v1", "given": "draft: notes",
     "value": None, "patch": None, "usage": {"input": 3, "output": 2, "cached_input": 0},
     "spend": {"tokens": 5, "cost": 0.0, "calls": 1}, "state": "done", "reason": "completed",
     "detail": "", "provenance": ["drafter"], "workspace": None},
    {"kind": "human_answered", "token": "0123456789abcdef", "branch": "", "question": "Ship?",
     "answer": "yes", "answered_by": "human", "timed_out": False},
]  # fmt: skip


def test_a_journal_of_an_older_format_is_refused_in_one_line_naming_its_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = kill_target_run_sync(drafting([1], []), ship, runs_root=tmp_path, task="notes",
                                 human=DeferredHuman())  # fmt: skip
    journal = first.run_dir / JOURNAL_FILE
    journal.write_text("".join(json.dumps(r) + "\n" for r in V1_JOURNAL))
    says = (
        r"journal\.jsonl:1: journal format version 1 is not supported "
        rf"\(this swarmflow reads version {JOURNAL_VERSION}\)"
    )
    with pytest.raises(ConfigError, match=says) as refused:
        kill_target_run_sync(drafting([2], []), ship, resume=first.run_dir)
    assert "\n" not in str(refused.value)
    assert main(["resume", str(first.run_dir), "--demo"]) == 2
    err = capsys.readouterr().err
    assert f"{journal}:1: journal format version 1 is not supported" in err
    assert err.count("\n") == 1


async def test_a_run_whose_events_are_kept_in_memory_resumes_too(tmp_path: Path) -> None:
    """`events="memory"` keeps the events in memory as well; the run's record is on disk all
    the same, so its paused question resumes without a second draft."""
    asked: list[str] = []
    first = await run(ship, model=drafting([1], asked), human=DeferredHuman(), runs_root=tmp_path,
                      task="notes", events="memory")  # fmt: skip
    assert first.status == "paused" and (first.run_dir / EVENTS_FILE).exists()
    done = await run(ship, model=drafting([2], asked), resume=first.run_dir, events="memory",
                     human=DeferredHuman({first.pause_token: "yes"}))  # fmt: skip
    assert (done.status, done.output, len(asked)) == ("ok", "yes", 1)


async def test_a_run_directory_whose_event_log_is_gone_is_not_resumed(tmp_path: Path) -> None:
    first = await run(ship, model=drafting([1], []), human=DeferredHuman(), runs_root=tmp_path,
                      task="notes")  # fmt: skip
    (first.run_dir / EVENTS_FILE).unlink()
    with pytest.raises(ConfigError, match=r"has no events\.jsonl: .* cannot be resumed"):
        await run(ship, model=drafting([1], []), resume=first.run_dir)


def test_a_journal_of_format_version_2_is_refused_in_one_line(tmp_path: Path) -> None:
    """Version 2 journaled agent calls but not their model calls: a resume reading one would
    pay again for what it cannot replay, so it is refused as version 1 is."""
    first = kill_target_run_sync(drafting([1], []), ship, runs_root=tmp_path, task="notes",
                                 human=DeferredHuman())  # fmt: skip
    journal = first.run_dir / JOURNAL_FILE
    opened = {"kind": "journal_opened", "version": 2, "run_id": first.run_dir.name}
    journal.write_text(json.dumps(opened) + "\n")
    says = r"journal\.jsonl:1: journal format version 2 is not supported"
    with pytest.raises(ConfigError, match=says) as refused:
        kill_target_run_sync(drafting([2], []), ship, resume=first.run_dir)
    assert "\n" not in str(refused.value)


def test_a_journal_of_format_three_is_refused_rather_than_paid_again(tmp_path: Path) -> None:
    """Format 3 digested a model call's request another way: read as this format, none of its
    settled calls would be found, and a resume would pay for them all again."""
    first = kill_target_run_sync(drafting([1], []), ship, runs_root=tmp_path, task="notes",
                                 human=DeferredHuman())  # fmt: skip
    journal = first.run_dir / JOURNAL_FILE
    lines = journal.read_text().splitlines()
    opened = json.loads(lines[0])
    assert opened["kind"] == "journal_opened" and opened["version"] == JOURNAL_VERSION == 4
    journal.write_text("\n".join([json.dumps({**opened, "version": 3}), *lines[1:]]) + "\n")
    says = r"journal\.jsonl:1: journal format version 3 is not supported \(this swarmflow reads"
    with pytest.raises(ConfigError, match=says):
        kill_target_run_sync(drafting([2], []), ship, resume=first.run_dir)
