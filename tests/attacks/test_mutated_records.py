"""Any record on disk, mutated at random, gives a one-line error or a correct run: never a
traceback, a hang, or an effect outside the run directory.

A finished-but-failed run directory is copied, one record in one file is mutated (a value of
another type, a path that climbs out, a huge or negative number, a deep nest, a missing or
extra key, bytes that are not JSON), and then it is read the ways a user reads it: `report`,
`graph`, `runs`, and resumed.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swarmflow import Agent, ConfigError, Team, agent, agent_session, flow, run
from swarmflow.cli import main
from swarmflow.testing import FunctionModel

broken = [True]


@flow(team=Team([Agent("w"), Agent("r")], edges=[("w", "r")]))
async def two_steps() -> str:
    drafted = (await agent("w", "draft it")).text
    async with agent_session("r") as r:
        await r.send(f"review: {drafted}")
        text = (await r.send("and now?")).text
    if broken[0]:
        raise RuntimeError("the flow's own code failed after its calls")
    return text


def _model() -> FunctionModel:
    return FunctionModel(lambda request: f"answer of {request.agent}, long enough to keep")


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("base")
    broken[0] = True
    result = anyio.run(lambda: run(two_steps, model=_model(), runs_root=root,
                                   raise_on_failure=False))  # fmt: skip
    broken[0] = False
    assert result.status == "failed"
    return result.run_dir


DEEP: Any = []
for _ in range(400):
    DEEP = [DEEP]

HOSTILE = st.sampled_from(
    [None, True, -1, 0, 10**30, -(10**30), 1e308, "", "../../../victim", "/", "-rf",
     "x" * 70_000, [], {}, DEEP, {"kind": "call_finished"}, "\u0000", "𝔘nicode", 3.5]
)  # fmt: skip
FILES = st.sampled_from(["events.jsonl", "journal.jsonl", "run.json", "run.pid"])


@st.composite
def mutations(draw: st.DrawFn) -> tuple[str, Callable[[bytes], bytes]]:
    name = draw(FILES)
    kind = draw(st.sampled_from(["value", "drop", "extra", "garbage", "cut"]))
    value = draw(HOSTILE)
    pick = draw(st.integers(0, 10_000))
    depth = draw(st.integers(0, 3))

    def mutate(data: bytes) -> bytes:
        lines = data.split(b"\n") if name.endswith(".jsonl") else [data]
        lines = [line for line in lines if line.strip()] or [b"{}"]
        i = pick % len(lines)
        if kind == "garbage":
            lines[i] = bytes(range(pick % 256, 256))[:64] or b"\xff"
        elif kind == "cut":
            lines[i] = lines[i][: pick % max(1, len(lines[i]))]
        else:
            lines[i] = _mutated_record(lines[i], kind, value, pick, depth)
        return b"\n".join(lines) + (b"\n" if name.endswith(".jsonl") else b"")

    return name, mutate


def _mutated_record(line: bytes, kind: str, value: Any, pick: int, depth: int) -> bytes:
    try:
        record = json.loads(line)
    except ValueError:
        return line
    holder = record
    for _ in range(depth):  # walk into a nested dict, when there is one
        inner = (
            [v for v in holder.values() if isinstance(v, dict)] if isinstance(holder, dict) else []
        )
        if not inner:
            break
        holder = inner[pick % len(inner)]
    if not isinstance(holder, dict) or not holder:
        return json.dumps(value).encode()
    key = sorted(holder)[pick % len(holder)]
    if kind == "drop":
        del holder[key]
    elif kind == "extra":
        holder[f"unknown_{pick}"] = value
    else:
        holder[key] = value
    return json.dumps(record).encode()


def _bounded(call: Callable[[], Any], seconds: float = 60) -> Any:
    """`call()` in a thread; a hang past `seconds` fails the test instead of the suite."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "hung"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _resume(run_dir: Path) -> None:
    async def go() -> None:
        try:
            await run(two_steps, model=_model(), resume=run_dir, raise_on_failure=False)
        except ConfigError as exc:
            assert "\n" not in str(exc), str(exc)

    anyio.run(go)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(mutation=mutations())
def test_a_mutated_record_is_one_line_or_a_correct_run(
    base_run: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    mutation: tuple[str, Callable[[bytes], bytes]],
) -> None:
    name, mutate = mutation
    parent = tmp_path_factory.mktemp("mutated")
    victim = parent / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    runs = parent / "runs"
    run_dir = runs / base_run.name
    shutil.copytree(base_run, run_dir)
    target = run_dir / name
    target.write_bytes(mutate(target.read_bytes() if target.exists() else b"12345"))
    capsys.readouterr()

    for argv in (["report", str(run_dir)], ["graph", str(run_dir)], ["runs", str(runs)]):
        code = _bounded(lambda argv=argv: main(argv))
        err = capsys.readouterr().err
        assert code in (0, 1, 2), (argv, code, err)
        assert "Traceback" not in err, (argv, err)
    _bounded(lambda: _resume(run_dir))
    assert "Traceback" not in capsys.readouterr().err
    assert (victim / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in parent.iterdir()) == ["runs", "victim"]
    assert sorted(p.name for p in runs.iterdir()) == [base_run.name]
