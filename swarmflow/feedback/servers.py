"""The language servers swarmflow knows, and how to find one on this machine.

A server is a command that speaks LSP over stdio. Adding one is one `ServerSpec` in
`KNOWN_SERVERS` (or passed to `LanguageFeedback(servers=...)`): its name, its command and
the file suffixes it checks.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One language server: how to start it and which files it checks."""

    name: str
    argv: tuple[str, ...]
    suffixes: tuple[str, ...] = (".py", ".pyi")
    language: str = "python"
    """The `languageId` its documents are opened with."""

    def command(self) -> list[str] | None:
        """The command line with the program found, or None when it is not installed."""
        program = find_program(self.argv[0])
        return None if program is None else [program, *self.argv[1:]]

    def checks(self, path: str) -> bool:
        return path.endswith(self.suffixes)


KNOWN_SERVERS: dict[str, ServerSpec] = {
    spec.name: spec
    for spec in (
        ServerSpec("ruff", ("ruff", "server")),
        ServerSpec("basedpyright", ("basedpyright-langserver", "--stdio")),
        ServerSpec("pyright", ("pyright-langserver", "--stdio")),
        ServerSpec("pylsp", ("pylsp",)),
    )
}
"""Lint (`ruff server`, installed with swarmflow's `lsp` extra) and type checkers."""


class ServerUnavailable(Exception):
    """The server could not be started, or did not answer `initialize` in time."""


def register(spec: ServerSpec) -> None:
    """Make `spec` known by its name to every later run (replacing one of the same name)."""
    KNOWN_SERVERS[spec.name] = spec


def find_program(name: str) -> str | None:
    """`name` on PATH, or beside this Python (a virtualenv's bin directory need not be on
    PATH when swarmflow runs from it)."""
    if os.sep in name:
        return name if os.access(name, os.X_OK) else None
    found = shutil.which(name)
    if found is not None:
        return found
    beside = Path(sys.executable).parent / name
    return str(beside) if os.access(beside, os.X_OK) else None


def installed() -> list[str]:
    """The known servers found on this machine, by name."""
    return [name for name, spec in KNOWN_SERVERS.items() if spec.command() is not None]
