"""`DefaultWorkspaces`: the workspace provider the runtime uses unless given another."""

from __future__ import annotations

import difflib
from pathlib import Path

import anyio
import anyio.to_thread

from swarmflow.core.errors import ConfigError, WorkspaceError
from swarmflow.core.ports import Workspace
from swarmflow.record.run_paths import branch_of, recorded_worktree, slug, worktrees_folder
from swarmflow.workspaces.local import LocalWorkspace
from swarmflow.workspaces.shared import SharedWorkspace
from swarmflow.workspaces.worktree import OnCommit, WorktreeWorkspace

KINDS = ("local", "worktree", "shared")


class DefaultWorkspaces:
    """Makes `local`, `worktree` and `shared` workspaces for the sessions of one run."""

    def __init__(
        self, run_dir: Path, repo: Path | None = None, on_commit: OnCommit | None = None
    ) -> None:
        self.run_dir = run_dir
        self.repo = repo
        self.on_commit = on_commit
        # Shared by every worktree of this run: git's repository-wide bookkeeping is not
        # safe to run concurrently.
        self._git_lock = anyio.Lock()
        self._worktrees: list[WorktreeWorkspace] = []
        self._shared: SharedWorkspace | None = None
        self._shared_lock = anyio.Lock()
        self._slugs: set[str] = set()
        self.base: str | None = None
        """The commit every worktree of this run forks from: the repository's HEAD when the
        first one was made (a resumed run's from its journal), so that a commit made to the
        repository meanwhile does not give one run's candidates different bases."""
        self.notes: set[str] = set()
        """Notices already given in this run; every workspace made here shares the set."""

    async def acquire(self, kind: str, agent: str, session: str) -> Workspace:
        """A workspace of `kind` for one session."""
        ws: LocalWorkspace | WorktreeWorkspace | SharedWorkspace
        if kind == "local":
            root = self.repo or self.run_dir / "workspace"
            ws = await anyio.to_thread.run_sync(LocalWorkspace, root)
        elif kind == "worktree":
            ws = await self._worktree(agent, session)
        elif kind == "shared":
            ws = await self._shared_workspace()
        else:
            raise ConfigError(_unknown_kind(kind), agent=agent, session=session)
        # One run, one set of notices (such as "no sandbox"), whichever workspace says it.
        ws.notes = self.notes
        return ws

    async def _worktree(self, agent: str, session: str) -> WorktreeWorkspace:
        """A fresh worktree on branch `swarmflow/<run>/<session>`."""
        if self.repo is None:
            raise ConfigError(
                f"agent {agent!r} wants a 'worktree' workspace, but the run has no repository; "
                "pass repo=<path to a git repository>",
                agent=agent,
                session=session,
            )
        name = self._unique(slug(session))
        ws = await WorktreeWorkspace.create(
            self.repo,
            branch_of(self.run_dir, name),
            worktrees_folder(self.run_dir) / name,
            self.base or "HEAD",
            on_commit=self.on_commit,
            lock=self._git_lock,
        )
        self.base = self.base or ws.base
        self._worktrees.append(ws)
        return ws

    def fork_from(self, base: str) -> None:
        """Make this run's new worktrees at `base` (a resumed run: its first process's base)."""
        self.base = base

    async def reattach(
        self, agent: str, session: str, *, root: str, branch: str, base: str
    ) -> WorktreeWorkspace:
        """The worktree an interrupted run of this run directory left, taken over as it is.

        `root` and `branch` come from the run's journal: they must name one of this run's
        worktrees and the branch made for it (`record.run_paths.recorded_worktree`).
        """
        if self.repo is None:
            raise ConfigError(
                f"agent {agent!r} worked in a worktree before the run was interrupted; resume "
                "it with repo=<the same git repository>",
                agent=agent,
                session=session,
            )
        path = await anyio.to_thread.run_sync(recorded_worktree, self.run_dir, root, branch)
        self._slugs.add(path.name)
        ws = await WorktreeWorkspace.reattach(
            self.repo, branch, path, base, on_commit=self.on_commit, lock=self._git_lock
        )
        self._worktrees.append(ws)
        return ws

    async def _shared_workspace(self) -> SharedWorkspace:
        """The run's one shared workspace, made on first use.

        Creating it awaits (the directory is made off the event loop), so sessions starting
        together would each make their own, with its own lock and versions: the lock makes
        the check and the store one step.
        """
        async with self._shared_lock:
            if self._shared is None:
                root = self.repo or self.run_dir / "shared"
                self._shared = await anyio.to_thread.run_sync(SharedWorkspace, root)
            return self._shared

    def _unique(self, name: str) -> str:
        """`name`, numbered when two sessions reduce to the same slug."""
        candidate, n = name, 1
        # A resumed run must not reuse a name its interrupted process gave a worktree.
        while candidate in self._slugs or (worktrees_folder(self.run_dir) / candidate).exists():
            n += 1
            candidate = f"{name}-{n}"
        self._slugs.add(candidate)
        return candidate

    async def close(self, keep: bool = False) -> None:
        """Release every worktree made here (removing them unless `keep`)."""
        failures: list[str] = []
        for ws in self._worktrees:
            try:
                await ws.release(keep=keep)
            except WorkspaceError as exc:
                failures.append(str(exc))
        if failures:
            raise WorkspaceError("could not remove every worktree: " + "; ".join(failures))


def _unknown_kind(kind: str) -> str:
    """The message for a kind the provider does not make."""
    if kind == "none":
        return "workspace 'none' has no directory; the runtime must not acquire one for it"
    close = difflib.get_close_matches(kind, KINDS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown workspace kind {kind!r}{hint} (known: none, {', '.join(KINDS)})"
