"""What the language-server tests share: a coder with feedback, and the servers left."""

from __future__ import annotations

import os
from pathlib import Path

from swarmflow import Agent
from swarmflow.core.messages import ModelRequest


def coder(**feedback: object) -> Agent:
    policy = {"servers": ["ruff"], "wait": 10.0, **feedback}
    return Agent(
        "coder", tools=["read_file", "write_file", "edit", "run_shell"], workspace="local",
        feedback=policy, sandbox="none",
    )  # fmt: skip


def language_servers_left() -> list[str]:
    """Processes started by this test process that are still language servers."""
    return [cmdline for _, cmdline in language_servers()]


def language_servers() -> list[tuple[int, str]]:
    """(pid, command line) of this test process's children that are ruff servers."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and "server" in cmdline and "ruff" in cmdline:
            found.append((int(entry.name), cmdline))
    return found


def evidence_of(request: ModelRequest) -> str:
    """The evidence message given at this request's step boundary (after the last answer), or
    ""."""
    messages = list(request.messages)
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    for message in messages[last + 1 :]:
        if message.role == "user" and "Evidence since your last step" in (message.content or ""):
            return message.content or ""
    return ""
