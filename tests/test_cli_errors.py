"""A careless user's input is one line on standard error and exit status 2, never a traceback,
whichever command meets it; a closed pipe and Ctrl-C end a command quietly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmflow.cli import main
from tests.dsl.helpers import flow_text
from tests.test_cli_run import _SilentServer

ROOT = Path(__file__).resolve().parents[1]
MODULES = {
    "flows.py": (
        "from swarmflow import Agent, Team, agent, flow\n\n"
        "@flow(team=Team([Agent('a')]))\n"
        "async def f(task: str) -> str:\n"
        "    return (await agent('a', task)).text\n\n"
        "not_a_flow = 3\n\n"
        "def not_a_model():\n"
        "    return 'a string'\n"
    ),
    "raises.py": "raise RuntimeError('the module breaks when imported')\n",
    "needs.py": "import a_module_nobody_has\n",
}


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user's folder, entered; what its modules add to sys.path and sys.modules goes."""
    for name, text in MODULES.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "f.swarm").write_text(flow_text("  return a(task).text", agents="agent a {}"))
    (tmp_path / "tasks.jsonl").write_text('{"task": "x"}\n')
    (tmp_path / "runs-folder").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".")])
    monkeypatch.setenv("SWARMFLOW_RUNS", str(tmp_path / "runs"))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path
    for name in MODULES:
        sys.modules.pop(name.removesuffix(".py"), None)


WRONG_FLOWS = [
    ("missing.swarm", "cannot read missing.swarm"),
    ("missing.py:f", "cannot read missing.py"),
    ("flows.py", "name what to take from it, as flows.py:NAME; it defines the flows f"),
    ("flows.py:g", "flows.py defines no 'g'; its flows: f"),
    ("flows.py:not_a_flow", "flows.py:not_a_flow is an int, not a swarmflow Flow"),
    ("raises.py:f", "cannot import raises.py: RuntimeError: the module breaks when imported"),
    ("raises:f", "cannot import raises: RuntimeError: the module breaks when imported"),
    ("needs:f", "cannot import needs: ModuleNotFoundError: No module named 'a_module_nobody_has'"),
    ("nowhere_at_all:f", "no module 'nowhere_at_all' on sys.path or in"),
]


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(("flow", "says"), WRONG_FLOWS)
@pytest.mark.parametrize(
    "command",
    [
        ["run", "{flow}", "--demo", "--input", "task=x"],
        ["batch", "{flow}", "--inputs", "tasks.jsonl", "--demo"],
        ["graph", "{flow}"],
        ["check", "{flow}"],
    ],
    ids=["run", "batch", "graph", "check"],
)
def test_a_flow_that_cannot_be_had_is_one_line_and_exit_2(
    here: Path, command: list[str], flow: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if command[0] in ("graph", "check") and flow.endswith(".swarm"):
        says = "cannot read missing.swarm"  # they read the file itself, with its diagnostics
    assert main([part.format(flow=flow) for part in command]) == 2
    assert says in _one_line(capsys)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "f.swarm", "--model", "m", "--input", "task=x"], "model 'm' has no endpoint"),
        (["batch", "f.swarm", "--inputs", "tasks.jsonl", "--model", "m"], "has no endpoint"),
        (
            ["run", "flows.py:f", "--model-object", "flows.py:not_a_flow", "--input", "task=x"],
            "is an int, not a model",
        ),
        (
            ["run", "flows.py:f", "--model-object", "flows:not_a_model", "--input", "task=x"],
            "made a str, not a model",
        ),
        (
            ["batch", "flows.py:f", "--model-object", "raises.py:m", "--inputs", "tasks.jsonl"],
            "cannot import raises.py",
        ),
        (["run", "flows.py:f", "--input", "task=x"], "choose a model: --model NAME"),
        (["run", "flows.py:f", "--demo", "--input", "tsk=x"], "flow f has no input tsk"),
        (["resume", "missing-run", "--demo"], "is not a run directory"),
        (["report", "missing-run"], "no such file"),
        (["board", "serve", "missing-run"], "is not a run directory"),
        (["graph", "missing-run-dir/"], "cannot read missing-run-dir/"),
        (["runs", "flows.py"], "flows.py is not a folder of runs"),
        (["run", "runs-folder", "--demo"], "cannot read runs-folder: a folder"),
    ],
)
def test_a_careless_option_is_one_line_and_exit_2(
    here: Path, argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert says in _one_line(capsys)


def test_resume_without_an_endpoint_for_its_model_is_one_line(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "ship.swarm").write_text(
        flow_text('  d = a(task)\n  return human("Ship it?", d)', agents="agent a {}",
                  edges="edges a -> human", signature="flow ship(task: str) -> any")
    )  # fmt: skip
    assert main(["run", "ship.swarm", "--demo", "--defer", "--input", "task=x"]) == 1
    run_dir = next((here / "runs").iterdir())
    capsys.readouterr()
    assert main(["resume", str(run_dir), "--model", "m"]) == 2
    assert "model 'm' has no endpoint" in _one_line(capsys)
    assert main(["resume", str(run_dir)]) == 2  # no model given, none recorded by name
    assert "--model-object file.py:NAME" in _one_line(capsys)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "swarmflow.cli", *args]


@pytest.mark.parametrize(
    "args",
    [("runs",), ("graph", "f.swarm"), ("run", "f.swarm", "--demo", "--input", "task=x")],
    ids=["runs", "graph", "run"],
)
def test_output_into_a_closed_pipe_ends_quietly(here: Path, args: tuple[str, ...]) -> None:
    """`swarmflow runs | head -1`, with the reader gone before the first write."""
    read, write = os.pipe()
    os.close(read)  # the reader has gone: every write to the pipe fails
    try:
        done = subprocess.run(
            _cli(*args), stdout=write, stderr=subprocess.PIPE, cwd=here, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    assert done.returncode == 141
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
    if args[0] != "run":  # a run's live progress goes to stderr, as ever
        assert done.stderr == ""


def test_ctrl_c_in_a_board_client_is_one_line_and_exit_130(tmp_path: Path) -> None:
    server = _SilentServer()  # a board that never answers: the client waits on it
    argv = _cli("board", "wait", "--url", f"http://127.0.0.1:{server.port}", "--token", "t",
                "--as", "lead")  # fmt: skip
    proc = subprocess.Popen(argv, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert server.connected.wait(60), "the client never called the board"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        server.close()
    assert proc.returncode == 130
    assert err.strip() == "swarmflow board: interrupted"


HANGING_FLOW = """
import sys

import anyio

from swarmflow import Agent, Team, agent, flow
from swarmflow.testing import FunctionModel


@flow(team=Team([Agent("w")]))
async def hang() -> str:
    return (await agent("w", "go")).text


def make():
    async def policy(request):
        print("READY", file=sys.__stdout__, flush=True)  # the call is in flight
        await anyio.sleep_forever()

    return FunctionModel(policy)
"""


def test_a_terminated_run_is_recorded_as_cancelled_and_leaves_no_pid_file(tmp_path: Path) -> None:
    (tmp_path / "hang.py").write_text(HANGING_FLOW)
    runs = tmp_path / "runs"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SWARMFLOW_RUNS": str(runs)}
    argv = _cli("run", "hang.py:hang", "--model-object", "hang.py:make")
    # Started with SIGINT ignored, as a script's background job is: SIGTERM must still stop it.
    ignoring = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *argv]
    with subprocess.Popen(ignoring, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:  # fmt: skip
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 143
    assert "Traceback" not in err and "swarmflow run: terminated" in err
    (run_dir,) = runs.iterdir()
    assert not (run_dir / "run.pid").exists()
    last = json.loads((run_dir / "events.jsonl").read_text().splitlines()[-1])
    assert (last["type"], last["status"]) == ("run_finished", "cancelled")


@pytest.mark.parametrize("command", ["check", "graph"])
def test_a_flow_file_that_is_a_fifo_or_a_device_is_one_line(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "flow.swarm"
    os.mkfifo(fifo)
    (tmp_path / "zero.swarm").symlink_to("/dev/zero")
    for path in (fifo, tmp_path / "zero.swarm"):
        done = subprocess.run(_cli(command, str(path)), capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120,
                              check=False)  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == f"swarmflow: cannot read {path}: not a regular file"
