"""Without `on="ray"` nothing of Ray is imported; a bad or unusable `on` is refused clearly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from swarmflow import ConfigError
from swarmflow.batches import batch
from swarmflow.testing import FunctionModel
from tests.batches.batch_target import answer, solve, task_list

ROOT = Path(__file__).parents[2]


def python(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


LOCAL_BATCH = """
import sys, anyio
from swarmflow.batches import batch
from swarmflow.testing import FunctionModel
from tests.batches.batch_target import answer, solve, task_list
{before}
result = anyio.run(lambda: batch(solve, task_list(3), out=sys.argv[1], model=FunctionModel(answer)
                                 {on}))
print(result.counts()["ok"], sorted(m for m in sys.modules if m == "ray" or m.startswith("ray.")))
"""


def test_a_local_batch_imports_nothing_of_ray(tmp_path: Path) -> None:
    done = python(LOCAL_BATCH.format(before="", on=""), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "[]"]


def test_on_ray_without_ray_installed_says_how_to_install_it(tmp_path: Path) -> None:
    hide_ray = "sys.modules['ray'] = None  # as if it were not installed"
    done = python(LOCAL_BATCH.format(before=hide_ray, on=', on="ray"'), tmp_path)
    assert done.returncode == 1
    assert "needs Ray" in done.stderr and "pip install 'swarmflow[ray]'" in done.stderr
    assert not (tmp_path / "results.jsonl").exists()


@pytest.mark.anyio
@pytest.mark.parametrize("on", ["Ray", "ray://", "dask", "ray:6379"])
async def test_an_unknown_place_is_refused_before_anything_runs(tmp_path: Path, on: str) -> None:
    with pytest.raises(ConfigError, match="use 'local'"):
        await batch(solve, task_list(2), out=tmp_path, on=on, model=FunctionModel(answer))
    assert not (tmp_path / "results.jsonl").exists()


@pytest.mark.anyio
async def test_workers_under_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="workers must be at least 1"):
        await batch(solve, task_list(2), out=tmp_path, on="ray", workers=0,
                    model=FunctionModel(answer))  # fmt: skip
