"""One session's edits, checked by the language servers its agent asks for.

Before an edit (`write_file`, `edit`) the target is opened in each server that checks it, so
the diagnostics it already had are known; after the edit its new text is sent, and only what
the edit introduced is posted (`findings.introduced`), at or above the severity, deduplicated,
bounded. `run_shell` is checked the same way for the files it changed (found by their size and
modification time); a file first seen changed by a command gives the baseline and is diffed
from its next change on. The session waits at most `Feedback.wait` seconds per pass; a pass
still open then is collected at a later step boundary.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio.to_thread
from pydantic import BaseModel

from swarmflow.core import safe_paths
from swarmflow.core.feedback_policy import SEVERITY_RANK, Feedback
from swarmflow.core.ports import Evidence, Inbox
from swarmflow.feedback.findings import Finding, admissible, introduced, render
from swarmflow.feedback.servers import ServerSpec
from swarmflow.record.events import DiagnosticsPosted, FeedbackChecked, FeedbackUnavailable

if TYPE_CHECKING:
    from swarmflow.feedback.connection import Connection  # it loads pygls


class Servers(Protocol):
    """Where a watch finds its servers (`service.LanguageFeedback`)."""

    def spec(self, name: str) -> ServerSpec | None: ...

    async def connection(
        self, name: str, root: Path, policy: Feedback, inbox: Inbox
    ) -> Connection | None: ...


EDIT_TOOLS = frozenset({"write_file", "edit"})
SHELL_TOOLS = frozenset({"run_shell"})
_log = logging.getLogger("swarmflow.feedback")
SCAN_LIMIT = 5_000
"""The most files a scan around a command looks at."""
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})

Signature = tuple[int, int]


@dataclass(slots=True)
class _Pass:
    """A change sent to a server, waiting for its diagnostics."""

    connection: Connection
    path: Path
    version: int
    count_before: int
    before: tuple[Finding, ...]
    started: float


class SessionWatch:
    """Implements `core.ports.EditWatch` for one session."""

    def __init__(self, service: Servers, policy: Feedback, root: Path, inbox: Inbox):
        self.service = service
        self.policy = policy
        self.root = root
        self.inbox = inbox
        self._scan: dict[Path, Signature] | None = None
        self._late: list[_Pass] = []
        self._broken = False
        inbox.add_source(self._collect_late)

    # -- the port ---------------------------------------------------------------------------

    async def before_tool(self, tool: str, args: BaseModel) -> None:
        if self._broken:
            return
        try:
            await self._before(tool, args)
        except Exception as exc:  # feedback never fails a run: a broken server is let go
            self._give_up(exc)

    async def after_tool(self, tool: str, args: BaseModel, ok: bool) -> None:
        if self._broken:
            return
        try:
            await self._after(tool, args, ok)
        except Exception as exc:
            self._give_up(exc)

    def _give_up(self, exc: Exception) -> None:
        self._broken = True
        self._late.clear()
        reason = (
            f"it stopped answering ({type(exc).__name__}: {exc}); no more feedback this session"
        )
        _log.warning("swarmflow: language servers %s: %s", ", ".join(self.policy.servers), reason)
        self.inbox.emit(FeedbackUnavailable, server=",".join(self.policy.servers), reason=reason)

    async def _before(self, tool: str, args: BaseModel) -> None:
        if tool in EDIT_TOOLS:
            target = self._target(args)
            if target is not None:
                await self._baseline(target)
        elif tool in SHELL_TOOLS:
            self._scan = await anyio.to_thread.run_sync(self._signatures)

    async def _after(self, tool: str, args: BaseModel, ok: bool) -> None:
        paths: list[Path] = []
        if tool in EDIT_TOOLS and ok:
            target = self._target(args)
            paths = [target] if target is not None else []
        elif tool in SHELL_TOOLS and self._scan is not None:
            before, self._scan = self._scan, None
            after = await anyio.to_thread.run_sync(self._signatures)
            paths = sorted(p for p, sig in after.items() if before.get(p) != sig)
        if paths:
            await self._check(paths)

    # -- a pass -----------------------------------------------------------------------------

    async def _connections(self, path: Path) -> list[Connection]:
        found = []
        for name in self.policy.servers:
            spec = self.service.spec(name)
            if spec is not None and not spec.checks(path.name):
                continue
            connection = await self.service.connection(name, self.root, self.policy, self.inbox)
            if connection is not None:
                found.append(connection)
        return found

    async def _baseline(self, path: Path) -> None:
        """Open `path` as it is before the edit, so what it already has is known."""
        for connection in await self._connections(path):
            if connection.is_open(path):
                continue
            text = await anyio.to_thread.run_sync(_read, self.root, path)
            if text is None:  # a new file: it had nothing before
                connection.published.pop(path, None)
                continue
            version = connection.send(path, text)
            await connection.wait_for(path, version, 0, self.policy.wait)

    async def _check(self, paths: Sequence[Path]) -> None:
        """Send the changed files to each server, wait (bounded), post what is new."""
        passes: list[_Pass] = []
        for path in paths:
            text = await anyio.to_thread.run_sync(_read, self.root, path)
            if text is None:
                continue
            for connection in await self._connections(path):
                passes.append(self._send(connection, path, text))
        deadline = time.perf_counter() + self.policy.wait
        done: dict[str, list[tuple[_Pass, tuple[Finding, ...]]]] = {}
        for step in passes:
            left = max(0.0, deadline - time.perf_counter())
            published = await step.connection.wait_for(
                step.path, step.version, step.count_before, left
            )
            if published is None:
                self._late.append(step)
                self._record(step, 0, timed_out=True)
            else:
                done.setdefault(step.connection.spec.name, []).append((step, published.findings))
        for server, answered in done.items():
            item = self._findings_item(server, answered, late=False)
            if item is not None:
                self.inbox.post(item)

    def _send(self, connection: Connection, path: Path, text: str) -> _Pass:
        """Send the new text; the pass compares against what was known before it."""
        earlier = next(
            (p for p in self._late if p.connection is connection and p.path == path), None
        )
        if earlier is not None:  # its answer never came: its baseline is still the one
            self._late.remove(earlier)
            before = earlier.before
        else:
            current = connection.current(path)
            unknown = current is None and connection.is_open(path)
            before = (_UNKNOWN,) if unknown else (current.findings if current else ())
        current = connection.current(path)
        count = current.count if current else 0
        version = connection.send(path, text)
        return _Pass(connection, path, version, count, before, time.perf_counter())

    def _findings_item(
        self, server: str, answered: Sequence[tuple[_Pass, tuple[Finding, ...]]], *, late: bool
    ) -> Evidence | None:
        """The inbox item for one server's answers, or None when nothing is new."""
        new: list[Finding] = []
        for step, after in answered:
            found = [] if _UNKNOWN in step.before else introduced(step.before, after)
            found = [f for f in found if _at_least(f, self.policy)]
            self._record(step, len(found))
            new += found
        kept = admissible(new, self.policy)
        if not kept:
            return None
        seconds = max(time.perf_counter() - s.started for s, _ in answered)
        self.inbox.emit(
            DiagnosticsPosted,
            server=server,
            files=sorted({f.path for f in kept}),
            codes=[f.code for f in kept],
            seconds=round(seconds, 6),
            late=late,
        )
        return Evidence("diagnostics", render(server, kept, len(new) - len(kept)))

    def _record(self, step: _Pass, new: int, *, timed_out: bool = False) -> None:
        self.inbox.emit(
            FeedbackChecked,
            server=step.connection.spec.name,
            files=[_shown(step.path, self.root)],
            new=new,
            seconds=round(time.perf_counter() - step.started, 6),
            timed_out=timed_out,
        )

    def _collect_late(self) -> Sequence[Evidence]:
        """At a step boundary: the passes whose diagnostics came after the session's wait."""
        ready: dict[str, list[tuple[_Pass, tuple[Finding, ...]]]] = {}
        for step in list(self._late):
            published = step.connection.answered(step.path, step.version, step.count_before)
            if published is not None:
                self._late.remove(step)
                ready.setdefault(step.connection.spec.name, []).append((step, published.findings))
        items = [
            self._findings_item(server, answered, late=True) for server, answered in ready.items()
        ]
        return [item for item in items if item is not None]

    # -- files ------------------------------------------------------------------------------

    def _target(self, args: BaseModel) -> Path | None:
        """The file an edit tool names, inside the workspace (the tool refuses the rest)."""
        given = getattr(args, "path", None)
        if not isinstance(given, str):
            return None
        try:
            return self.root / safe_paths.resolve(self.root, given)
        except (OSError, ValueError):
            return None

    def _signatures(self) -> dict[Path, Signature]:
        """Size and modification time of the files the servers check, under the root."""
        suffixes = tuple(
            suffix
            for name in self.policy.servers
            if (spec := self.service.spec(name)) is not None
            for suffix in spec.suffixes
        )
        found: dict[Path, Signature] = {}
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS]
            for name in files:
                if name.endswith(suffixes) and len(found) < SCAN_LIMIT:
                    path = Path(folder, name)
                    try:
                        info = path.lstat()  # a link is not sent: `_read` would refuse it
                    except OSError:
                        continue
                    if stat.S_ISREG(info.st_mode):
                        found[path] = (info.st_mtime_ns, info.st_size)
        return found


_UNKNOWN = Finding("", 0, 0, 0, "", "the baseline never came", "")
"""Marks a pass whose file's earlier diagnostics are not known: nothing of it is posted."""


def _at_least(finding: Finding, policy: Feedback) -> bool:
    return finding.severity <= SEVERITY_RANK[policy.min_severity]


def _shown(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _read(root: Path, path: Path) -> str | None:
    """The text of the workspace file `path`, read through the safe-path layer (no link
    followed, a FIFO refused at once, at most its cap); None when it cannot be read so."""
    try:
        data = safe_paths.read_bytes(root, path.relative_to(root).as_posix())
    except (OSError, ValueError):
        return None
    return data.decode("utf-8", errors="replace")
