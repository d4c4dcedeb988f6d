"""A harness program attacks the host through the folder it can write (its private folder,
bound at `/run/swarmflow` in the sandbox): every host-side read of it goes through the
safe-path layer, and the folder's owner is never taken from what the folder holds.

Each test runs with bubblewrap and without it (the program then runs on the host).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from swarmflow import Agent, Team, agent, flow, run_sync
from swarmflow.core.messages import ModelRequest
from swarmflow.harnesses import Harness
from swarmflow.testing import FunctionModel
from tests.harnesses.programs import command
from tests.harnesses.support import of_type


def test_an_answer_file_linked_to_a_host_file_is_refused(tmp_path: Path) -> None:
    key = tmp_path / "id_key"
    key.write_text("PRIVATE KEY 7f3a")
    key.chmod(0o600)
    linker = Agent("linker", workspace="local", harness=Harness(
        command=command("link", str(key), "{answer_file}"), task="stdin", answer="file"))  # fmt: skip

    @flow(team=Team([linker]))
    async def steal() -> str:
        return (await agent("linker", "answer")).text

    result = run_sync(steal, model=FunctionModel(lambda r: "ok"), raise_on_failure=False)
    assert result.status == "failed"
    assert "answer file is refused" in str(result.error)
    assert "symbolic link" in str(result.error)
    assert "PRIVATE KEY" not in str(result.output) + str(result.error)
    (ended,) = of_type(result, "harness_ended")
    assert ended.reason == "error"


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


@pytest.mark.parametrize("forged", ["99999999999999999999", "dead"])
def test_a_forged_owner_file_neither_fails_nor_sweeps_another_call(forged: str) -> None:
    """The forger writes an `owner` into its folder and waits; meanwhile another harness
    call starts (and sweeps the temporary folder): it runs, and the forger's folder is kept."""
    text = str(_dead_pid()) if forged == "dead" else forged
    forger = Agent("forger", workspace="local", harness=Harness(
        command=command("forge", text, "{answer_file}"), task="stdin", answer="file"))  # fmt: skip
    other = Agent("other", workspace="local",
                  harness=Harness(command=command("coder", "{task}")))  # fmt: skip
    forged_ready, other_done = anyio.Event(), anyio.Event()

    async def policy(request: ModelRequest) -> str:
        if request.agent == "forger":
            forged_ready.set()
            await other_done.wait()
            return "ok"
        return "print('x')" if "write" in request.prompt.lower() else "summary"

    @flow(team=Team([forger, other]))
    async def both() -> str:
        results: dict[str, str] = {}

        async def forge() -> None:
            results["forger"] = (await agent("forger", "forge")).text

        async def after() -> None:
            await forged_ready.wait()
            try:
                results["other"] = (await agent("other", "write app.py")).text
            finally:
                other_done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(forge)
            tg.start_soon(after)
        return f"{results['forger']} / {results['other']}"

    result = run_sync(both, model=FunctionModel(policy), raise_on_failure=False)
    assert result.status == "ok", result.error
    assert str(result.output).startswith("forger done / ")


def test_wrong_typed_or_deeply_nested_requests_get_400_and_the_run_goes_on() -> None:
    """`"role": ["user"]`, `"tool_calls": 5` and a body nested 100,000 deep are each a 400
    to the program, which then asks again and is answered: the run does not fail."""
    sender = Agent("sender", workspace="local",
                   harness=Harness(command=command("malformed"), task="stdin"))  # fmt: skip

    @flow(team=Team([sender]))
    async def send() -> str:
        return (await agent("sender", "send")).text

    result = run_sync(send, model=FunctionModel(lambda r: "answered"), raise_on_failure=False)
    assert result.status == "ok", result.error
    assert result.output == "400 400 400\n200: answered"
    (ended,) = of_type(result, "harness_ended")
    assert sum(ended.refusals.values()) == 3
    assert {e.status for e in of_type(result, "harness_refused")} == {400}


def test_every_oversized_body_gets_its_413() -> None:
    """Ten 10 MB bodies: each is refused with a 413 that reaches the program (in the sandbox
    the answer crosses the forwarder and the Unix socket; on the host, loopback TCP)."""
    sender = Agent("sender", workspace="local",
                   harness=Harness(command=command("oversize", "10"), task="stdin"))  # fmt: skip

    @flow(team=Team([sender]))
    async def send() -> str:
        return (await agent("sender", "send")).text

    result = run_sync(send, model=FunctionModel(lambda r: "unused"), raise_on_failure=False)
    assert result.status == "ok", result.error
    assert result.output == " ".join(["413"] * 10)
