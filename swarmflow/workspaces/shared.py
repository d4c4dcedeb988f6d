"""The STORM shared workspace: one directory for many agents, with optimistic file versioning.

Every file has a version counter (0 when first seen, bumped on each accepted write or outside
change). Each reader has a snapshot of the versions it read. A write is accepted only while that
whole snapshot is current and the reader has read the target (if it exists); otherwise the write
is refused with `StaleWrite`, which carries the current content and diffs so the agent can retry.

The sessions working in it subscribe their inboxes (`subscribe`): a write that makes another
reader's view stale tells that reader at its next step, each session is told the commands the
others ran (`shared_log`), a file may be reserved for a short time (`reservations`), and a
write may carry an intent note that later readers are shown.
"""

from __future__ import annotations

import difflib
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from swarmflow.core.errors import ToolError
from swarmflow.core.ports import Evidence, Inbox
from swarmflow.record.events import CommandsMissed, WorkspaceInvalidated
from swarmflow.tools.access import load_text, store_text
from swarmflow.tools.paths import relative_name, resolve_inside
from swarmflow.workspaces.reservations import Reservations
from swarmflow.workspaces.shared_log import (
    Command,
    Signature,
    changed,
    commands_item,
    invalidation_item,
    signatures,
)

HISTORY = 16
MAX_SHOWN = 20_000


class StaleWrite(ToolError):
    """A write refused because the writer's read snapshot is out of date."""

    def __init__(
        self,
        message: str,
        *,
        path: str,
        stale: tuple[str, ...],
        current: str | None,
        diff: str,
        **kw: Any,
    ) -> None:
        super().__init__(message, **kw)
        self.path = path
        self.stale = stale
        self.current = current
        self.diff = diff


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a file: its content (None when absent) and who wrote it."""

    number: int
    content: str | None
    writer: str | None = None
    note: str = ""
    """The writer's intent note: why it changed."""


@dataclass(slots=True)
class FileState:
    """A file's recent versions, newest last."""

    history: deque[Version] = field(default_factory=lambda: deque(maxlen=HISTORY))

    @property
    def latest(self) -> Version:
        return self.history[-1]

    def bump(self, content: str | None, writer: str | None, note: str = "") -> Version:
        """Record a new version."""
        version = Version(self.latest.number + 1, content, writer, note)
        self.history.append(version)
        return version

    def find(self, number: int) -> Version | None:
        """The version `number`, if still kept."""
        return next((v for v in self.history if v.number == number), None)


class SharedWorkspace:
    """One directory shared by many sessions, with per-file versions and per-reader snapshots."""

    kind = "shared"

    def __init__(self, root: Path, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock`: seconds, for reservations' timeouts (a test passes its own)."""
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve()
        self.notes: set[str] = set()
        """Notices already given in this workspace's run (the provider shares its set)."""
        self._lock = anyio.Lock()
        self._files: dict[str, FileState] = {}
        self._snapshots: dict[str, dict[str, int]] = {}
        self._inboxes: dict[str, Inbox] = {}
        """The sessions told what others do here, by session id."""
        self._agents: dict[str, str] = {}
        """Session id -> agent name, for what others are told."""
        self._log: list[Command] = []
        self._cursors: dict[str, int] = {}
        """Per session: how much of the command log it has been given."""
        self.reservations = Reservations(clock)

    # -- the sessions -----------------------------------------------------------------------

    def subscribe(self, inbox: Inbox) -> None:
        """Tell `inbox.session` what others do here from now on (`core.ports.PostsEvidence`)."""
        self._inboxes[inbox.session] = inbox
        self._agents[inbox.session] = inbox.agent
        self._cursors.setdefault(inbox.session, len(self._log))
        inbox.add_source(lambda: self._missed(inbox))

    def unsubscribe(self, session: str) -> None:
        """The session ended: nothing more is posted to it, its reservations end."""
        self._inboxes.pop(session, None)
        self.reservations.release_all(session)

    def agent_of(self, session: str | None) -> str:
        if session is None:
            return "a change outside the workspace tools"
        return self._agents.get(session, session)

    async def read_text(self, path: str, reader: str | None) -> str:
        """The file's text; a `reader` records the version it saw, None only peeks."""
        key = self._key(path)
        async with self._lock:
            version = await self._sync(key)
            if version.content is None:
                raise ToolError(f"no such file: {path!r}")
            if reader is not None:
                self._snapshots.setdefault(reader, {})[key] = version.number
            return version.content

    def unseen_notes(self, path: str, reader: str) -> list[str]:
        """The intent notes others left on versions of `path` newer than `reader` read."""
        state = self._files.get(self._key(path))
        if state is None:
            return []
        seen = self._snapshots.get(reader, {}).get(self._key(path), -1)
        return [
            f"version {v.number} by {self.agent_of(v.writer)}: {v.note}"
            for v in state.history
            if v.number > seen and v.note and v.writer != reader
        ]

    async def write_text(
        self, path: str, content: str, reader: str, note: str = ""
    ) -> tuple[str, int, int]:
        """Write `content` unless `reader`'s snapshot is stale (then raise StaleWrite) or
        another session holds the file (`FileReserved`). `note`: why, shown to later readers.

        Returns the file's key, the version it replaced and its new version.
        """
        key = self._key(path)
        async with self._lock:
            self.reservations.refuse_others(key, reader, "write")
            await self._check(key, reader)
            previous = self._files[key].latest.number
            await anyio.to_thread.run_sync(store_text, self.root, key, content)
            version = self._files[key].bump(content, reader, note)
            self._snapshots.setdefault(reader, {})[key] = version.number
            self._invalidate(key, reader)
            return key, previous, version.number

    # -- telling the others -----------------------------------------------------------------

    def _invalidate(self, key: str, writer: str | None) -> None:
        """Post a notice to every other subscribed reader whose view of `key` is now stale."""
        latest = self._files[key].latest
        for session, inbox in list(self._inboxes.items()):
            seen = self._snapshots.get(session, {}).get(key)
            if session == writer or seen is None or seen >= latest.number:
                continue
            who = self.agent_of(writer)
            diff = self._diff(key, seen)
            notice = invalidation_item(
                key, version=latest.number, seen=seen, writer=who, note=latest.note, diff=diff
            )
            inbox.post(notice)
            inbox.emit(
                WorkspaceInvalidated,
                path=key,
                version=latest.number,
                writer=None if writer is None else who,
                seen=seen,
            )

    def _missed(self, inbox: Inbox) -> Sequence[Evidence]:
        """The commands others ran since `inbox`'s session was last given the log."""
        start = self._cursors.get(inbox.session, len(self._log))
        self._cursors[inbox.session] = len(self._log)
        missed = [c for c in self._log[start:] if c.session != inbox.session]
        if not missed:
            return ()
        inbox.emit(CommandsMissed, commands=[c.as_fields() for c in missed])
        return (commands_item(missed),)

    # -- the command log --------------------------------------------------------------------

    async def command_started(self) -> dict[str, Signature]:
        """What the files look like before a command runs (`command_finished` compares)."""
        return await anyio.to_thread.run_sync(signatures, self.root)

    async def command_finished(
        self, before: dict[str, Signature], *, command: str, session: str, exit_code: int | None
    ) -> Command:
        """Log the command with the files it changed, each at its new version; tell the
        readers those changes made stale."""
        after = await anyio.to_thread.run_sync(signatures, self.root)
        files: list[tuple[str, int | None]] = []
        async with self._lock:
            for key in changed(before, after):
                known = self._files.get(key)
                if known is None and key in before:  # never read here, but it existed: the
                    known = self._files[key] = FileState()  # command made its version 1
                    known.history.append(Version(0, None))
                old = known.latest.number if known else None
                version = await self._sync(key, writer=session)
                if old is not None and version.number == old:
                    continue  # written through the tools meanwhile: already recorded
                files.append((key, None if version.content is None else version.number))
                self._invalidate(key, session)
            entry = Command(
                len(self._log), command, session, self.agent_of(session), exit_code, tuple(files)
            )
            self._log.append(entry)
        return entry

    def version(self, path: str) -> int | None:
        """The version of `path` as last seen, None for a file never touched through here."""
        state = self._files.get(self._key(path))
        return state.latest.number if state else None

    def snapshot(self, reader: str) -> dict[str, int]:
        """A copy of the versions `reader` has read, by relative path."""
        return dict(self._snapshots.get(reader, {}))

    async def finalize(self, message: str) -> None:
        """Nothing to commit: a shared workspace is not versioned by git here."""
        return None

    async def release(self, keep: bool = False) -> None:
        """Nothing to give back: the directory belongs to the run."""
        return None

    def key_of(self, path: str) -> str:
        """The key files are versioned and reserved by (raises WorkspaceEscape)."""
        return self._key(path)

    def _key(self, path: str) -> str:
        """The file's key: its real path relative to the root (raises WorkspaceEscape)."""
        return relative_name(self.root, resolve_inside(self.root, path))

    async def _sync(self, key: str, writer: str | None = None) -> Version:
        """The file's current version, bumped when the disk changed behind our back (`writer`:
        the session whose command changed it, when known)."""
        try:
            content = await anyio.to_thread.run_sync(load_text, self.root, key)
        except ToolError:
            if writer is None:
                raise
            content = None  # a command left something the tools cannot read: gone for them
        state = self._files.get(key)
        if state is None:
            state = self._files[key] = FileState()
            state.history.append(Version(0, content, writer))
        elif state.latest.content != content:
            # Changed outside this API (a shell command, an editor): still a new version.
            state.bump(content, writer)
        return state.latest

    async def _check(self, key: str, reader: str) -> None:
        """Raise StaleWrite unless every file `reader` read is unchanged and it read `key`."""
        seen = self._snapshots.get(reader, {})
        stale = [k for k, number in seen.items() if (await self._sync(k)).number != number]
        target = await self._sync(key)
        unread = target.content is not None and key not in seen
        if stale or unread:
            raise self._refusal(key, reader, stale, unread)

    def _refusal(self, key: str, reader: str, stale: list[str], unread: bool) -> StaleWrite:
        """The StaleWrite for `key`: what is stale, the current content and the diffs."""
        seen = self._snapshots.get(reader, {})
        current = self._files[key].latest
        lines = [f"write to {key!r} refused: your view of the workspace is out of date."]
        if unread:
            lines.append(f"- {key}: exists (version {current.number}) but you have not read it")
        lines += [self._describe_stale(k, seen[k]) for k in stale]
        lines.append("Re-read these files and redo your change on top of their current content.")
        diffs = "".join(self._diff(k, seen[k]) for k in stale)
        lines.append(f"\nCurrent content of {key} (version {current.number}):")
        lines.append(_clip(current.content if current.content is not None else "(deleted)"))
        if diffs:
            lines.append("\nChanges since you read them:\n" + _clip(diffs))
        return StaleWrite(
            "\n".join(lines), path=key, stale=tuple(stale), current=current.content, diff=diffs
        )

    def _describe_stale(self, key: str, seen: int) -> str:
        """One line: which version the reader saw, which is current, and who changed it."""
        latest = self._files[key].latest
        by = (
            f"by {self.agent_of(latest.writer)}" if latest.writer else "outside the workspace tools"
        )
        return f"- {key}: you read version {seen}, it is now version {latest.number} (changed {by})"

    def _diff(self, key: str, seen: int) -> str:
        """Unified diff from the version the reader saw to the current one."""
        state = self._files[key]
        old = state.find(seen)
        if old is None:
            return f"(version {seen} of {key} is no longer kept; re-read the file)\n"
        return "".join(
            difflib.unified_diff(
                _lines(old.content),
                _lines(state.latest.content),
                fromfile=f"{key} (version {seen}, as you read it)",
                tofile=f"{key} (version {state.latest.number}, current)",
            )
        )


def _lines(text: str | None) -> list[str]:
    """Lines for difflib, each ending in a newline so a missing final one cannot glue lines."""
    return [line if line.endswith("\n") else line + "\n" for line in (text or "").splitlines(True)]


def _clip(text: str) -> str:
    """Text cut to a size the model can take in."""
    if len(text) <= MAX_SHOWN:
        return text
    return text[:MAX_SHOWN] + f"\n... [{len(text) - MAX_SHOWN} more characters]"
