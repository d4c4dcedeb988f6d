"""`@tool` functions that try to end the run or the process: `sys.exit()`, KeyboardInterrupt,
and a sync function stuck forever past its timeout, through real runs and `swarmflow run`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from swarmflow import Agent, tool
from swarmflow.testing import tool_call

from .test_function_tools import run_agent, scripted


@tool
def quit_sync(code: int) -> str:
    """Exits the interpreter, or tries to."""
    sys.exit(code)


@tool
async def quit_async(code: int) -> str:
    """Exits the interpreter from a coroutine, or tries to."""
    raise SystemExit(code)


@tool
def still_here() -> str:
    """Answers."""
    return "still here"


async def test_a_tool_calling_sys_exit_fails_its_call_and_the_run_goes_on() -> None:
    analyst = Agent("analyst", tools=[quit_sync, quit_async, still_here])
    result, model = await run_agent(
        analyst,
        scripted(
            tool_call("quit_sync", code=3),
            tool_call("quit_async", code=4),
            tool_call("still_here"),
        ),
    )
    assert result.status == "ok", repr(result.error)
    assert result.output.text == "still here"
    executed = [e for e in result.events if e.type == "tool_executed"]
    assert [(e.tool, e.ok) for e in executed] == [
        ("quit_sync", False),
        ("quit_async", False),
        ("still_here", True),
    ]
    assert executed[0].result == "tool 'quit_sync' called sys.exit(3); the call failed"
    assert executed[1].result == "tool 'quit_async' called sys.exit(4); the call failed"
    told = [m.content for m in model.requests[1].messages if m.role == "tool"]
    assert told == ["tool 'quit_sync' called sys.exit(3); the call failed"]


FLOWS = '''
import threading

from swarmflow import Agent, Team, agent, flow, tool, tool_policy
from swarmflow.testing import FunctionModel, tool_call


@tool
def stuck() -> str:
    """Blocks forever."""
    threading.Event().wait()
    return "never"


@tool
def interrupt() -> str:
    """Raises what Ctrl-C raises."""
    raise KeyboardInterrupt


def model():
    seen = []

    def policy(request):
        told = [m.content for m in request.messages if m.role == "tool"]
        if not told:
            return tool_call(request.tools[0].name)
        seen.append(told)
        return "after: " + told[-1]

    return FunctionModel(policy)


@flow(team=Team([Agent("dev", tools=[tool_policy(stuck, timeout=0.2)])]))
async def hangs():
    return (await agent("dev", "go")).text


@flow(team=Team([Agent("dev", tools=[interrupt])]))
async def interrupts():
    return (await agent("dev", "go")).text
'''


def swarmflow_run(tmp_path: Path, flow: str) -> subprocess.CompletedProcess[str]:
    """`swarmflow run` on a flow of FLOWS, in a process of its own, given 60 s to end."""
    (tmp_path / "flows.py").write_text(textwrap.dedent(FLOWS))
    env = os.environ | {"SWARMFLOW_RUNS": str(tmp_path / "runs")}
    argv = [sys.executable, "-m", "swarmflow.cli", "run", f"flows.py:{flow}"]
    argv += ["--model-object", "flows.py:model"]
    return subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_sync_tool_stuck_past_its_timeout_does_not_keep_the_process_alive(
    tmp_path: Path,
) -> None:
    done = swarmflow_run(tmp_path, "hangs")  # before, the process hung here at exit
    assert done.returncode == 0, done.stderr
    assert "after: tool 'stuck' timed out after 0.2s (attempt 1 of 1)" in done.stdout


def test_keyboard_interrupt_from_a_tool_stops_the_run_as_ctrl_c_does(tmp_path: Path) -> None:
    done = swarmflow_run(tmp_path, "interrupts")
    assert done.returncode == 130, done.stderr
    assert done.stderr.endswith("swarmflow run: interrupted; the run was stopped\n")
    assert "Traceback" not in done.stderr
    assert "after:" not in done.stdout  # no answer came out of the run
