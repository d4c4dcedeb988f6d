"""What the shared workspace tells its sessions: invalidations and the commands they missed.

A write that makes another session's read of a file stale posts one notice into that
session's inbox (the file, its new version, who wrote it, the intent note, the diff from what
it read, capped). `run_shell` in the workspace is logged: the command, the agent, its exit
code and the files it changed, each with its new version (found by comparing size and
modification time before and after); each session is given, at its next step, the commands
others ran since its last one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from swarmflow.core import safe_paths
from swarmflow.core.ports import Evidence

NOTICE_DIFF_CAP = 4_000
"""The most characters of diff one invalidation shows."""
SCAN_LIMIT = 20_000
"""The most files a scan around a command compares."""

Signature = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Command:
    """One command run in the shared workspace."""

    seq: int
    command: str
    session: str
    agent: str
    exit_code: int | None
    files: tuple[tuple[str, int | None], ...]
    """(path, new version; None when the command deleted it)."""

    def as_fields(self) -> dict[str, object]:
        return {
            "command": self.command,
            "agent": self.agent,
            "exit_code": self.exit_code,
            "files": {path: version for path, version in self.files},
        }

    def render(self) -> str:
        code = "timed out" if self.exit_code is None else f"exit code {self.exit_code}"
        head = f"- {self.agent} ran `{_one_line(self.command)}` ({code})"
        if not self.files:
            return head + ", changing no file"
        changed = ", ".join(
            f"{path} (deleted)" if version is None else f"{path} (now version {version})"
            for path, version in self.files
        )
        return f"{head}, changing {changed}"


def commands_item(missed: list[Command]) -> Evidence:
    lines = [f"Commands others ran in the shared workspace since your last step ({len(missed)}):"]
    lines += [entry.render() for entry in missed]
    lines.append("Re-read the files they changed before you edit them.")
    return Evidence("commands", "\n".join(lines))


def invalidation_item(
    key: str, *, version: int, seen: int, writer: str, note: str, diff: str
) -> Evidence:
    """The notice a stale reader of `key` is given (the newest replaces an older one)."""
    lines = [
        f"{key} changed: it is now version {version}, written by {writer}; you read version {seen}."
    ]
    if note:
        lines.append(f"Their intent: {note}")
    if diff:
        shown = (
            diff
            if len(diff) <= NOTICE_DIFF_CAP
            else diff[:NOTICE_DIFF_CAP]
            + (f"\n... [{len(diff) - NOTICE_DIFF_CAP} more characters of diff]")
        )
        lines.append("The change since you read it:\n" + shown)
    lines.append(f"Re-read {key} before you write it: a write on your old view is refused.")
    return Evidence("workspace", "\n".join(lines), key=f"invalidated:{key}")


def signatures(root: Path) -> dict[str, Signature]:
    """Size and modification time of the files under `root` (not `.git`), by relative path.

    Walked from the root's descriptor (`safe_paths.folder`), every folder held open and no
    link followed (`os.fwalk`): a folder swapped for a link to the host is not listed."""
    found: dict[str, Signature] = {}
    with safe_paths.folder(root) as top:
        for folder, dirs, files, fd in os.fwalk(".", dir_fd=top):
            dirs[:] = [d for d in dirs if d != ".git"]
            for name in files:
                if name.startswith(".swarmflow-") or len(found) >= SCAN_LIMIT:
                    continue
                try:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                found[PurePosixPath(folder, name).as_posix()] = (info.st_mtime_ns, info.st_size)
    return found


def changed(before: dict[str, Signature], after: dict[str, Signature]) -> list[str]:
    """The paths created, changed or deleted between two scans."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def _one_line(command: str, cap: int = 200) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= cap else flat[:cap] + " ..."
