"""`swarmflow run`: caps only lower the budget, a failed run has no traceback, Ctrl-C exits 130."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from swarmflow.cli import main
from swarmflow.record.files import EVENTS_FILE
from tests.dsl.helpers import flow_text

ROOT = Path(__file__).resolve().parents[1]


def events_of(out: str) -> list[dict[str, object]]:
    path = Path(out.split("events: ", 1)[1].splitlines()[0])
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def capped(tmp_path: Path) -> Path:
    path = tmp_path / "capped.swarm"
    text = flow_text("  return n + 1", signature="flow f(n: int) -> int", agents="")
    path.write_text(text.replace("\nsteps {", "budget tokens 1000, calls 40\nsteps {", 1))
    return path


def test_a_cap_lowers_the_flows_budget(
    capped: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWARMFLOW_RUNS", str(tmp_path / "runs"))
    args = ["run", str(capped), "--demo", "--input", "n=1"]
    assert main([*args, "--budget-tokens", "10", "--budget-seconds", "60"]) == 0
    limits = events_of(capsys.readouterr().out)[0]["limits"]
    assert limits == {"tokens": 10, "cost": None, "calls": 40, "seconds": 60.0}
    assert main([*args, "--budget-tokens", "5000000", "--budget-calls", "400"]) == 0
    limits = events_of(capsys.readouterr().out)[0]["limits"]
    assert limits["tokens"] == 1000 and limits["calls"] == 40  # never raised


def test_a_failed_run_prints_its_error_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARMFLOW_RUNS", str(tmp_path / "runs"))
    path = tmp_path / "fails.swarm"
    path.write_text(flow_text("  xs = []\n  return xs[0]", agents=""))
    assert main(["run", str(path), "--demo", "--input", "task=x"]) == 1
    captured = capsys.readouterr()
    assert "status: failed" in captured.out and "error: DslError" in captured.out
    assert "Traceback" not in captured.out + captured.err


class _SilentServer:
    """Accepts one HTTP connection and never answers, so the run waits on its model."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connected = threading.Event()
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.connected.set()

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.sock.close()


def test_ctrl_c_prints_one_line_exits_130_and_closes_the_log(tmp_path: Path) -> None:
    path = tmp_path / "slow.swarm"
    path.write_text(flow_text("  x = a(task)\n  return x.text"))
    server = _SilentServer()
    env = {
        **os.environ,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{server.port}/v1",
        "OPENAI_API_KEY": "sk-test",
        "SWARMFLOW_RUNS": str(tmp_path / "runs"),
    }
    env.pop("SWARMFLOW_BLOCK_MODEL_CALLS", None)
    cmd = [sys.executable, "-m", "swarmflow.cli", "run", str(path), "--model", "m"]
    proc = subprocess.Popen(
        [*cmd, "--input", "task=x"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.connected.wait(60), "the run never called its model"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        server.close()
    assert proc.returncode == 130
    # Standard error holds the live progress, then one line about the interruption.
    assert err.strip().splitlines()[-1] == "swarmflow run: interrupted; the run was stopped"
    assert "Traceback" not in err and err.count("interrupted") == 1
    (log,) = (tmp_path / "runs").glob(f"*/{EVENTS_FILE}")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "cancelled"
    assert [e["type"] for e in events].count("run_finished") == 1
