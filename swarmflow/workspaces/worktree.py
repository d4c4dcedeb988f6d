"""Git worktree workspaces: one branch per coder session, its result a typed `Patch`."""

from __future__ import annotations

import contextlib
import inspect
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import anyio
import anyio.to_thread

from swarmflow.core.errors import WorkspaceError
from swarmflow.core.patch import Patch
from swarmflow.workspaces.debris import debris_among
from swarmflow.workspaces.git import (
    COMMIT_CONFIG,
    changed_files,
    diff,
    git,
    git_succeeds,
    rev_parse,
)

OnCommit = Callable[[str, str, tuple[str, ...]], Awaitable[None] | None]
"""`on_commit(commit_sha, branch, files)`: called after a workspace's branch moved."""

DEFAULT_MESSAGE = "swarmflow: candidate"


async def resolved(path: Path) -> Path:
    """`path` made absolute with symlinks resolved, off the event loop."""
    return Path(await anyio.Path(path).resolve())


def _guard(lock: AbstractAsyncContextManager[object] | None) -> AbstractAsyncContextManager[object]:
    """The lock, or a no-op when the caller does not share one."""
    return lock if lock is not None else contextlib.nullcontext()


class WorktreeWorkspace:
    """A git worktree on its own branch, forked from a base commit."""

    kind = "worktree"

    def __init__(
        self,
        repo: Path,
        root: Path,
        branch: str,
        base: str,
        *,
        on_commit: OnCommit | None = None,
        lock: AbstractAsyncContextManager[object] | None = None,
        git_dir: Path | None = None,
        common_dir: Path | None = None,
    ) -> None:
        self.repo = repo
        self.root = root
        self.branch = branch
        self.base = base
        self.on_commit = on_commit
        # Recorded when git made the worktree: the `.git` file in `root` is the workspace's to
        # write, so swarmflow's own commands never follow it.
        self.git_dir = git_dir or repo / ".git" / "worktrees" / root.name
        self.common_dir = common_dir or repo / ".git"
        self.notes: set[str] = set()
        """Notices already given in this workspace's run (the provider shares its set)."""
        # Worktree and branch bookkeeping of one repository must not run concurrently:
        # git takes repository-wide locks (packed-refs, worktrees/) that a second call trips on.
        self._lock = lock
        self._head = base
        self.released = False

    @classmethod
    async def create(
        cls,
        repo: Path,
        branch: str,
        path: Path,
        base: str = "HEAD",
        *,
        on_commit: OnCommit | None = None,
        lock: AbstractAsyncContextManager[object] | None = None,
    ) -> WorktreeWorkspace:
        """`git worktree add -b <branch> <path> <base>` and wrap the result."""
        repo = await resolved(repo)
        async with _guard(lock):
            sha = await rev_parse(repo, base)
            await anyio.to_thread.run_sync(lambda: path.parent.mkdir(parents=True, exist_ok=True))
            await git(repo, "worktree", "add", "--quiet", "-b", branch, str(path), sha)
            git_dir = Path((await git(path, "rev-parse", "--absolute-git-dir")).strip())
            common = await git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
        return cls(
            repo,
            await resolved(path),
            branch,
            sha,
            on_commit=on_commit,
            lock=lock,
            git_dir=git_dir,
            common_dir=Path(common.strip()),
        )

    @property
    def sandbox_read_only(self) -> tuple[Path, ...]:
        """Shown read-only in the shell sandbox, so `git diff` and `git log` work there."""
        return (self.common_dir,)

    @property
    def where(self) -> tuple[str, ...]:
        """Git options naming this worktree's git directory and work tree explicitly."""
        return (f"--git-dir={self.git_dir}", f"--work-tree={self.root}")

    @classmethod
    async def reattach(
        cls,
        repo: Path,
        branch: str,
        path: Path,
        base: str,
        *,
        on_commit: OnCommit | None = None,
        lock: AbstractAsyncContextManager[object] | None = None,
    ) -> WorktreeWorkspace:
        """Take over the worktree an interrupted run left at `path`, as it is.

        A worktree that is gone is made again on its branch, or at `base` if the branch is
        gone too. `path` must be the run's own (`record.run_paths.recorded_worktree`): a
        half-made directory there is removed, and a symbolic link is refused, never followed.
        """
        repo = await resolved(repo)
        async with _guard(lock):
            if await anyio.Path(path).is_symlink():
                raise WorkspaceError(f"worktree {path} is a symlink; not taking it over")
            if not await anyio.Path(path / ".git").exists():
                await remove_worktree(repo, path)  # a half-made directory, git's stale record
                if await git_succeeds(repo, "rev-parse", "--verify", "--quiet", branch):
                    await git(repo, "worktree", "add", "--quiet", str(path), branch)
                else:
                    await git(repo, "worktree", "add", "--quiet", "-b", branch, str(path), base)
            root = await resolved(path)
            git_dir, common = await _registered_git_dir(repo, root)
            ws = cls(
                repo,
                root,
                branch,
                base,
                on_commit=on_commit,
                lock=lock,
                git_dir=git_dir,
                common_dir=common,
            )
        ws._head = await ws.head()
        return ws

    async def head(self) -> str:
        """The commit the worktree's HEAD is at now."""
        return await rev_parse(self.root, "HEAD", *self.where)

    async def restart_from(self, commit: str) -> None:
        """Put the worktree back at `commit`, as a call that runs again first found it.

        What is there now is kept: uncommitted changes in the repository's stash, commits
        past `commit` on a backup branch `<branch>-interrupted` (numbered when one is there).
        """
        async with _guard(self._lock):
            await rev_parse(self.repo, commit)  # a commit the repository does not hold: refused
            await _back_to(self.repo, self.root, self.branch, commit, self.where)
        self._head = commit

    async def finalize(self, message: str) -> Patch:
        """Commit everything that changed; the patch is the diff from the base to the head."""
        where = self.where
        await git(self.root, *where, "add", "-A")
        await _unstage_debris(self.root, self.base, where)
        if not await _index_clean(self.root, where):
            msg = message.strip() or DEFAULT_MESSAGE
            commit = ("commit", "--quiet", "--no-verify", "-m", msg)
            await git(self.root, *where, *COMMIT_CONFIG, *commit)
        head = await rev_parse(self.root, "HEAD", *where)
        if head != self._head:
            # The head may also have moved through the agent's own `git commit`.
            await self._notify(head, await changed_files(self.root, self._head, head, *where))
            self._head = head
        files = await changed_files(self.root, self.base, head, *where)
        text = await diff(self.root, self.base, head, *where)
        return Patch(diff=text, base=self.base, commit=head, branch=self.branch, files=files)

    async def _notify(self, head: str, files: tuple[str, ...]) -> None:
        """Tell the runtime about the new commit (it emits `workspace_changed`)."""
        if self.on_commit is None:
            return
        result = self.on_commit(head, self.branch, files)
        if inspect.isawaitable(result):
            await result

    async def release(self, keep: bool = False) -> None:
        """Remove the worktree and its branch, unless `keep`; safe to call twice."""
        if keep or self.released:
            return
        async with _guard(self._lock):
            await remove_worktree(self.repo, self.root)
            await git(self.repo, "branch", "-D", "--quiet", self.branch)
        self.released = True


async def _back_to(
    repo: Path, root: Path, branch: str, commit: str, where: tuple[str, ...]
) -> None:
    """Put a worktree back at `commit`, keeping what was there in the stash and a backup branch."""
    if await git(root, *where, "status", "--porcelain"):
        message = f"swarmflow: unfinished work of {branch}"
        await git(root, *where, "stash", "push", "--include-untracked", "--quiet", "-m", message)
    head = await rev_parse(root, "HEAD", *where)
    if head != commit:
        await _keep_backup(repo, branch, head)
    await git(root, *where, "reset", "--hard", "--quiet", commit)


async def _keep_backup(repo: Path, branch: str, head: str) -> None:
    """Point a backup branch at `head`: `<branch>-interrupted`, else `-interrupted-2`, ...,
    the first that is free (a worktree restarted twice keeps both backups) or already there."""
    n = 1
    while True:
        name = f"refs/heads/{branch}-interrupted" + ("" if n == 1 else f"-{n}")
        if not await git_succeeds(repo, "rev-parse", "--verify", "--quiet", name):
            await git(repo, "update-ref", name, head)
            return
        if await rev_parse(repo, name) == head:
            return
        n += 1


async def _registered_git_dir(repo: Path, root: Path) -> tuple[Path, Path]:
    """The git directory the repository itself records for the worktree at `root`, and the
    common one: read from `<common>/worktrees/*/gitdir`, never from the worktree's `.git`."""
    common = Path(
        (await git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir")).strip()
    )

    def find() -> Path | None:
        for entry in sorted((common / "worktrees").glob("*/gitdir")):
            recorded = Path(entry.read_text(encoding="utf-8").strip())
            if recorded.parent.resolve() == root:
                return entry.parent
        return None

    found = await anyio.to_thread.run_sync(find)
    if found is None:
        raise WorkspaceError(f"{repo} has no record of a worktree at {root}")
    return found, common


async def _unstage_debris(root: Path, base: str, where: tuple[str, ...]) -> None:
    """Take the build debris a product adds (`workspaces.debris`) out of the index: it stays on
    disk, and out of the commit and the patch."""
    added = await git(
        root,
        *where,
        "diff",
        "--cached",
        "--name-only",
        "--diff-filter=A",
        "-z",
        "--no-renames",
        base,
    )
    found = debris_among(name for name in added.split("\0") if name)
    if found:
        names = "".join(f"{name}\0" for name in found).encode("utf-8")
        rm = ("rm", "--cached", "--quiet", "--pathspec-from-file=-", "--pathspec-file-nul")
        await git(root, *where, "--literal-pathspecs", *rm, data=names)


async def _index_clean(root: Path, where: tuple[str, ...]) -> bool:
    """True when the staged tree equals HEAD."""
    out = await git(root, *where, "diff", "--cached", "--name-only", "-z")
    return not out


async def remove_worktree(repo: Path, root: Path) -> None:
    """Remove a worktree, its directory even if git refuses, and git's record of it.

    A symbolic link at `root` is refused: what it points at is not the worktree's to remove.
    """
    if await anyio.Path(root).is_symlink():
        raise WorkspaceError(f"worktree {root} is a symlink; not removing what it points at")
    with contextlib.suppress(WorkspaceError):
        await git(repo, "worktree", "remove", "--force", "--force", str(root))
    # rmtree tolerates a directory git already removed.
    await anyio.to_thread.run_sync(lambda: shutil.rmtree(root, ignore_errors=True))
    await git(repo, "worktree", "prune")


async def apply_patch(
    repo: Path, patch: Patch, branch: str, message: str = "swarmflow: apply chosen patch"
) -> str:
    """Point `branch` (created or moved) at the patch applied to its base; return the commit.

    Worktrees share the repository's object store, so the patch's own commit is used when it is
    there; otherwise the diff is applied in a temporary worktree at the patch's base.
    """
    repo = await resolved(repo)
    sha = await _existing_commit(repo, patch.commit) or await _commit_diff(repo, patch, message)
    await git(repo, "branch", "--force", branch, sha)
    return sha


async def _existing_commit(repo: Path, sha: str) -> str | None:
    """`sha` when it names a commit in `repo`."""
    if not sha:
        return None
    try:
        return await rev_parse(repo, sha)
    except WorkspaceError:
        return None


async def _commit_diff(repo: Path, patch: Patch, message: str) -> str:
    """Commit `patch.diff` on top of `patch.base` in a throwaway worktree."""
    scratch = Path(await anyio.to_thread.run_sync(tempfile.mkdtemp, "", "swarmflow-apply-"))
    base = await rev_parse(repo, patch.base or "HEAD")
    await git(repo, "worktree", "add", "--quiet", "--detach", str(scratch), base)
    try:
        if patch.empty:
            return base
        await git(scratch, "apply", "--index", "--whitespace=nowarn", data=patch.diff.encode())
        await git(scratch, *COMMIT_CONFIG, "commit", "--quiet", "--no-verify", "-m", message)
        return await rev_parse(scratch, "HEAD")
    finally:
        with anyio.CancelScope(shield=True):
            await remove_worktree(repo, scratch)
