"""Fenced code blocks of a Markdown page, and running them the way a reader would.

A block's info string is its language, optionally followed by `file=NAME`: such a block is a
file the reader saves (written into the working folder). Other `python` blocks are run in
order, each as a script in that folder; in `sh` blocks every `swarmflow ...` line is run and
`export NAME=VALUE` sets the environment of the lines after it. Set-up lines (`make`, `source`)
are what the test environment has already done.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
SETUP = ("make ", "source ")


@dataclass(frozen=True)
class Block:
    language: str
    file: str | None
    code: str
    line: int

    @property
    def where(self) -> str:
        return f"line {self.line} ({self.language})"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        named = re.search(r"file=(\S+)", match.group(2))
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(match.group(1), named.group(1) if named else None, match.group(3), line))
    return found


def run_python(block: Block, folder: Path, env: dict[str, str]) -> str:
    """Run a Python block as a script in `folder`; its output, or AssertionError with it."""
    done = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=folder,
        env={**env, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])},
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{block.where} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def run_shell(block: Block, folder: Path, env: dict[str, str]) -> list[str]:
    """Run each `swarmflow` line of a shell block; the outputs, in order."""
    outputs = []
    for raw in block.code.splitlines():
        line = raw.split("  #", 1)[0].strip()
        if not line or line.startswith(SETUP):
            continue
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            env.setdefault(name, value)  # a test may have pointed it somewhere already
            continue
        words = shlex.split(line)
        assert words[0] == "swarmflow", f"{block.where}: cannot run {line!r}"
        done = subprocess.run(
            [sys.executable, "-m", "swarmflow.cli", *words[1:]],
            cwd=folder,
            env={**env, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])},
            check=False,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{block.where}: {line!r} failed:\n{done.stdout}{done.stderr}"
        outputs.append(done.stdout)
    return outputs
