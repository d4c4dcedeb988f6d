"""A run id names one directory under the runs root, and a fresh run never joins another's.

A run id is one directory name (docs/api.md): `..`, `.`, a path with a separator or an absolute
path would put the run's `events.jsonl` and `run.pid` outside the runs root; a NUL byte would
be a `ValueError` from deep inside. A fresh run into a directory that holds a run would append
a second run to the first one's log, its sequence numbers starting again at 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from swarmflow import Agent, ConfigError, Team, agent, flow, run
from swarmflow.record.files import EVENTS_FILE
from swarmflow.testing import FunctionModel


@flow(team=Team([Agent("w")]))
async def one_call() -> str:
    return (await agent("w", "hi")).text


def quick() -> FunctionModel:
    return FunctionModel(lambda request: "ok")


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


HOSTILE_IDS = {
    "parent": "..",
    "itself": ".",
    "up and over": "../x",
    "down then up twice": "a/../../b",
    "a separator": "a/b",
    "absolute": "{tmp}/escaped",
    "a NUL byte": "a\x00b",
    "an option": "-rf",
    "hidden": ".hidden",
    "dots inside": "a..b",
    "too long": "r" * 129,
    "a backslash": "a\\b",
    "a newline": "a\nb",
}


@pytest.mark.parametrize("run_id", HOSTILE_IDS.values(), ids=HOSTILE_IDS.keys())
async def test_a_run_id_that_is_not_one_directory_name_is_refused(
    tmp_path: Path, run_id: str
) -> None:
    root = tmp_path / "area" / "runs"
    run_id = run_id.replace("{tmp}", str(tmp_path))
    with pytest.raises(ConfigError, match="cannot name a run directory") as refused:
        await run(one_call, model=quick(), runs_root=root, run_id=run_id)
    assert "\n" not in str(refused.value).replace(repr(run_id), "")
    assert files_under(tmp_path) == set()  # nothing written, inside the root or out of it


@pytest.mark.parametrize("run_id", ["20261130-214512-a1b2c3", "task-000001", "a.b_c-D9", "x" * 128])
async def test_a_plain_run_id_names_its_directory(tmp_path: Path, run_id: str) -> None:
    result = await run(one_call, model=quick(), runs_root=tmp_path, run_id=run_id)
    assert result.run_dir == (tmp_path / run_id).resolve()


def events_of(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run_dir / EVENTS_FILE).read_text().splitlines()]


@pytest.mark.parametrize("fails", [False, True], ids=["finished", "failed"])
async def test_reusing_a_run_id_is_refused_and_points_at_resume(
    tmp_path: Path, fails: bool
) -> None:
    def answer(request: object) -> str:
        if fails:
            raise RuntimeError("the model's client broke")
        return "ok"

    first = await run(one_call, model=FunctionModel(answer), runs_root=tmp_path, run_id="same",
                      raise_on_failure=False)  # fmt: skip
    before = (first.run_dir / EVENTS_FILE).read_bytes()
    with pytest.raises(ConfigError, match="already holds run same; resume it") as refused:
        await run(one_call, model=quick(), runs_root=tmp_path, run_id="same")
    assert "swarmflow resume" in str(refused.value)
    assert (first.run_dir / EVENTS_FILE).read_bytes() == before  # no second run appended
    seqs = [e["seq"] for e in events_of(first.run_dir)]
    assert seqs == list(range(len(seqs)))


async def test_a_directory_a_live_process_took_is_refused(tmp_path: Path) -> None:
    run_dir = tmp_path / "taken"
    run_dir.mkdir()
    async with await anyio.open_process(
        [sys.executable, "-c", "import sys; sys.stdin.read()"]
    ) as other:
        (run_dir / "run.pid").write_text(str(other.pid))  # another process is starting it
        with pytest.raises(ConfigError, match=rf"taken by a live run \(process {other.pid}\)"):
            await run(one_call, model=quick(), runs_root=tmp_path, run_id="taken")
        assert other.stdin is not None
        await other.stdin.aclose()
    assert not (run_dir / EVENTS_FILE).exists()
    # Once that process is gone its file is stale, and the directory free.
    result = await run(one_call, model=quick(), runs_root=tmp_path, run_id="taken")
    assert result.status == "ok"


async def test_two_runs_started_together_under_one_id_start_once(tmp_path: Path) -> None:
    outcomes: list[str] = []

    async def start() -> None:
        try:
            result = await run(one_call, model=quick(), runs_root=tmp_path, run_id="twice")
            outcomes.append(result.status)
        except ConfigError as exc:
            outcomes.append(f"refused: {exc}")

    async with anyio.create_task_group() as group:
        group.start_soon(start)
        group.start_soon(start)
    assert sorted(o.split(":")[0] for o in outcomes) == ["ok", "refused"]
    assert [e["type"] for e in events_of(tmp_path / "twice")].count("run_started") == 1


async def test_an_empty_directory_or_an_empty_log_is_free(tmp_path: Path) -> None:
    (tmp_path / "prepared").mkdir()
    (tmp_path / "prepared" / "notes.txt").write_text("made before the run\n")
    (tmp_path / "prepared" / EVENTS_FILE).write_text("")
    result = await run(one_call, model=quick(), runs_root=tmp_path, run_id="prepared")
    assert result.status == "ok"
