"""How many broken edits language-server feedback catches at the next step, and its cost.

A scripted coder makes twelve edits to a small package: eight break it (an undefined name, a
syntax error, an unused import, a name redefined, a misspelled call, a deleted variable still
used, and two that break another module: a renamed function and a removed constant that
`main.py` still imports), four are harmless. Run with feedback off and on (`ruff server`); an
edit counts as caught when the very next request carries a diagnostic for it. The cost is the
`feedback_checked` time of each edit's pass and the whole run's extra wall time.

    .venv/bin/python -m benchmarks.feedback_catch [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from swarmflow import Agent, Team, agent, flow, run
from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call

FILES = {
    "pkg/util.py": "LIMIT = 3\n\n\ndef helper(x):\n    return x + 1\n",
    "pkg/main.py": "from pkg.util import LIMIT, helper\n\n\ndef run(v):\n    total = helper(v)\n"
    "    return min(total, LIMIT)\n",
}
# (file, old, new, the file the break shows in, or "" for a harmless edit)
EDITS: list[tuple[str, str, str, str]] = [
    ("pkg/main.py", "    total = helper(v)\n", "    total = helper(v)\n    n = 1\n", ""),
    ("pkg/main.py", "min(total, LIMIT)", "min(totl, LIMIT)", "pkg/main.py"),  # undefined name
    ("pkg/main.py", "min(totl, LIMIT)", "min(total, LIMIT)", ""),  # the fix
    ("pkg/util.py", "return x + 1", "return x + 1 +", "pkg/util.py"),  # syntax error
    ("pkg/util.py", "return x + 1 +", "return x + 2", ""),
    ("pkg/util.py", "LIMIT = 3\n", "import os\n\nLIMIT = 3\n", "pkg/util.py"),  # unused import
    (
        "pkg/main.py",
        "def run(v):",
        "def helper(v):\n    return v\n\n\ndef run(v):",
        "pkg/main.py",
    ),  # F811
    ("pkg/main.py", "total = helper(v)", "total = helpr(v)", "pkg/main.py"),  # misspelled call
    ("pkg/main.py", "    n = 1\n", "", ""),
    ("pkg/main.py", "total = helpr(v)", "totl = helper(v)", "pkg/main.py"),  # total now undefined
    (
        "pkg/util.py",
        "def helper(x):",
        "def help_one(x):",
        "pkg/main.py",
    ),  # main.py still imports it
    ("pkg/util.py", "LIMIT = 3\n", "", "pkg/main.py"),  # main.py imports LIMIT
]


def _scenario(repo: Path) -> FunctionModel:
    def policy(request: ModelRequest) -> Any:
        step = len(model.requests)
        if step <= len(EDITS):
            path, old, new, _ = EDITS[step - 1]
            return tool_call("edit", path=path, old=old, new=new)
        return "done"

    model = FunctionModel(policy)
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return model


def _told(request: ModelRequest) -> str:
    messages = list(request.messages)
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return "\n".join(m.content or "" for m in messages[last + 1 :] if m.role == "user")


async def _once(feedback: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp, "repo")
        model = _scenario(repo)  # makes the folder
        coder = Agent(
            "coder", tools=["edit"], workspace="local", feedback="lsp" if feedback else None
        )

        @flow(team=Team([coder]))
        async def edits() -> Any:
            return await agent("coder", "make the edits")

        started = time.perf_counter()
        result = await run(edits, model=model, repo=repo, runs_root=Path(tmp, "runs"))
        wall = time.perf_counter() - started
        told = [_told(model.requests[i + 1]) for i in range(len(EDITS))]
        # Caught: the next request names a diagnostic in the file where the break shows.
        caught = sum(
            1 for (*_, where), t in zip(EDITS, told, strict=True) if where and f"- {where}:" in t
        )
        false = sum(
            1 for (*_, where), t in zip(EDITS, told, strict=True) if not where and "- pkg/" in t
        )
        passes = [e.seconds for e in result.events if e.type == "feedback_checked"]
        return {"caught": caught, "false": false, "wall": wall, "passes": passes}


async def main(runs: int) -> None:
    broken = sum(1 for *_, where in EDITS if where)
    for feedback in (False, True):
        await _once(feedback)  # warm-up (the server binary, the imports)
        got = [await _once(feedback) for _ in range(runs)]
        passes = [s for g in got for s in g["passes"]]
        label = "on " if feedback else "off"
        print(
            f"feedback {label}: caught {got[0]['caught']}/{broken} broken edits at the next step, "
            f"{got[0]['false']} harmless edits drew a warning; run wall median "
            f"{statistics.median(g['wall'] for g in got) * 1000:.0f} ms"
            + (
                f"; per edit pass median {statistics.median(passes) * 1000:.1f} ms, "
                f"max {max(passes) * 1000:.1f} ms"
                if passes
                else ""
            )
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    anyio.run(main, parser.parse_args().runs)
