"""What a harness agent costs: the metering endpoint's added latency per model call, and a
harness agent beside a native one on the same scripted task.

    python -m benchmarks.harness_agents [--calls 200] [--repeats 5] [--json PATH]

1. Latency. A harness program makes `--calls` sequential chat-completions calls to its
   endpoint and times each; the model answers at once (a `FunctionModel`), so what is left
   is the endpoint's own cost: the sandbox's loopback forwarder and Unix socket (or the
   host's loopback without the sandbox), HTTP, the handoff check, reserving, settling and
   recording. Beside it, the same model called in-process, as a native session calls it.
2. Cost. One task (make `answer()` return 42 in a worktree, then say what changed) done by a
   native coder (`write_file`, then its answer), by a small harness program making the same
   two model calls, and by mini-swe-agent (when installed): tokens and wall time per run.

Not part of the `benchmarks` suite's cases (it starts sandboxes and programs); its figures
are in docs/harnesses.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.core.messages import Message, ModelRequest, ToolCall
from swarmflow.harnesses import Harness, mini_swe_agent
from swarmflow.testing import FunctionModel, tool_call

TIMER = r"""
import json, os, sys, time, urllib.request
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
key = os.environ["OPENAI_API_KEY"]
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "ping"}]}).encode()
opener = urllib.request.build_opener()
times = []
for _ in range(int(sys.argv[1])):
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Authorization": "Bearer " + key})
    started = time.perf_counter()
    with opener.open(request, timeout=60) as answer:
        answer.read()
    times.append(time.perf_counter() - started)
print(json.dumps(times))
"""

CODER = r"""
import json, os, sys, urllib.request
from pathlib import Path
def ask(messages):
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "m", "messages": messages}).encode(), method="POST",
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())["choices"][0]["message"]["content"]
messages = [{"role": "user", "content": sys.argv[1]}]
Path("app.py").write_text(ask(messages))
messages += [{"role": "assistant", "content": "written"}, {"role": "user", "content": "summarise"}]
print(ask(messages))
"""

NEW_APP = "def answer():\n    return 42\n"
SUMMARY = "answer() returns 42"


def _repo(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@localhost"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "app.py").write_text("def answer():\n    return 41\n")
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "initial"], cwd=repo, check=True)
    return repo


# -- 1. latency ---------------------------------------------------------------------------


async def endpoint_latency(calls: int, sandbox: str) -> list[float]:
    timer = Agent("timer", workspace="local", sandbox=sandbox,
                  harness=Harness(command=[sys.executable, "-c", TIMER, str(calls)],
                                  task="stdin"))  # fmt: skip

    @flow(team=Team([timer]))
    async def timed() -> str:
        return (await agent("timer", "time it")).text

    result = await run(timed, model=FunctionModel(lambda r: "pong"), events="jsonl")
    times: list[float] = json.loads(result.output)
    return times[5:]  # the first calls warm the connection and the estimator


async def direct_latency(calls: int) -> list[float]:
    model = FunctionModel(lambda r: "pong")
    request = ModelRequest(messages=[Message("user", "ping")], agent="timer")
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await model.complete(request)
        times.append(time.perf_counter() - started)
    return times[5:]


# -- 2. cost ------------------------------------------------------------------------------


def _native_policy(request: ModelRequest) -> str | ToolCall:
    if any(m.role == "tool" for m in request.messages):
        return SUMMARY
    return tool_call("write_file", path="app.py", content=NEW_APP)


def _harness_policy(request: ModelRequest) -> str | ToolCall:
    return SUMMARY if request.prompt == "summarise" else NEW_APP


def _mini_policy(request: ModelRequest) -> ToolCall:
    if not any(m.role == "tool" for m in request.messages):
        return tool_call("bash", command="sed -i 's/return 41/return 42/' app.py")
    return tool_call("bash", command=f"printf 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\n{SUMMARY}'")


async def one_task(coder: Agent, policy: Any) -> dict[str, float]:
    @flow(team=Team([coder]))
    async def task() -> str:
        made = await agent("coder", "make answer() return 42")
        assert made.patch is not None and "+    return 42" in made.patch.diff, made
        return made.text

    with tempfile.TemporaryDirectory() as folder:
        repo = _repo(Path(folder))
        started = time.perf_counter()
        result = await run(task, model=FunctionModel(policy), repo=repo, events="jsonl",
                           runs_root=Path(folder) / "runs")  # fmt: skip
        wall = time.perf_counter() - started
    usage = result.usage["coder"]
    return {"wall": wall, "tokens": usage.tokens_in + usage.tokens_out, "calls": usage.calls}


def _coders() -> dict[str, tuple[Agent, Any]]:
    native = Agent("coder", workspace="worktree", tools=["write_file"])
    small = Agent("coder", workspace="worktree",
                  harness=Harness(command=[sys.executable, "-c", CODER, "{task}"]))  # fmt: skip
    found = {
        "native": (native, _native_policy),
        "harness (small program)": (small, _harness_policy),
    }
    try:
        import minisweagent  # noqa: F401
    except ImportError:
        return found
    found["harness (mini-swe-agent)"] = (
        Agent("coder", workspace="worktree", harness=mini_swe_agent()),
        _mini_policy,
    )
    return found


async def main(calls: int, repeats: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    direct = await direct_latency(calls)
    figures["direct model call, median us"] = statistics.median(direct) * 1e6
    for sandbox in ("bwrap", "none"):
        times = await endpoint_latency(calls, sandbox)
        figures[f"endpoint call ({sandbox}), median ms"] = statistics.median(times) * 1e3
        figures[f"endpoint call ({sandbox}), p90 ms"] = statistics.quantiles(times, n=10)[-1] * 1e3
    for name, (coder, policy) in _coders().items():
        runs = [await one_task(coder, policy) for _ in range(repeats if "mini" not in name else 1)]
        figures[name] = {
            "tokens": runs[0]["tokens"],
            "calls": runs[0]["calls"],
            "wall median s": statistics.median(r["wall"] for r in runs),
        }
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    found = anyio.run(main, args.calls, args.repeats)
    print(json.dumps(found, indent=2))
    if args.json:
        args.json.write_text(json.dumps(found, indent=2) + "\n")
