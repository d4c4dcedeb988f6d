"""The built wheel carries everything a flow reads at run time: `swarmflow demo` runs from it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pip(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "-q", *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_demo_runs_from_the_installed_wheel(tmp_path: Path) -> None:
    wheels, site, work = tmp_path / "wheels", tmp_path / "site", tmp_path / "work"
    work.mkdir()
    _pip("wheel", "--no-deps", "-w", str(wheels), str(ROOT))
    (wheel,) = wheels.glob("swarmflow-*.whl")
    _pip("install", "--no-deps", "--target", str(site), str(wheel))
    # The installed copy comes first on the path, ahead of the checkout's editable install;
    # the dependencies come from the test environment.
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("SWARMFLOW_RUNS", None)
    where = subprocess.run(
        [sys.executable, "-c", "import swarmflow; print(swarmflow.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(site)), where.stdout
    demo = subprocess.run(
        [sys.executable, "-m", "swarmflow.cli", "demo"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "[ok ]" in demo.stdout
