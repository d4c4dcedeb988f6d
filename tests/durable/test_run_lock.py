"""One process at a time per run directory: a resume while another process holds the run is
refused before anything is read or written, and the lock goes with the process that held it."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from swarmflow import Agent, ConfigError, Team, agent, flow, run
from swarmflow.testing import FunctionModel

broken = [True]


@flow(team=Team([Agent("w")]))
async def one_call() -> str:
    text = (await agent("w", "hi")).text
    if broken[0]:
        raise RuntimeError("the flow's own code failed after the call")
    return text


async def test_a_run_held_by_another_process_is_not_resumed(tmp_path: Path) -> None:
    broken[0] = True
    first = await run(one_call, model=FunctionModel(lambda r: "ok"), runs_root=tmp_path,
                      raise_on_failure=False)  # fmt: skip
    broken[0] = False
    before = {p.name: p.read_bytes() for p in first.run_dir.iterdir() if p.is_file()}
    # What another process resuming it holds: the lock, on a file description of its own.
    other = os.open(first.run_dir / "run.lock", os.O_RDWR)
    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with pytest.raises(ConfigError, match="in use by another process"):
            await run(one_call, model=FunctionModel(lambda r: "ok"), resume=first.run_dir)
        after = {p.name: p.read_bytes() for p in first.run_dir.iterdir() if p.is_file()}
        assert after == before  # nothing read into the record, nothing written
    finally:
        os.close(other)  # the other process ends: its lock goes with it
    resumed = await run(one_call, model=FunctionModel(lambda r: "ok"), resume=first.run_dir)
    assert resumed.status == "ok"
    again = await run(one_call, model=FunctionModel(lambda r: "ok"), runs_root=tmp_path)
    assert again.status == "ok"  # a run that ended lets go of its directory
