"""A run's product, read from the record and put on a fresh checkout of its task's base.

What the `tests` grader grades, by these rules (docs/experiments.md, "What the numbers mean"):

- The product is the run's `Patch` when its output is one, re-read whole from the commit it
  names when the run's checkout holds it (so binary changes come with their full index), or
  else the run's checkout as the run left it; either way a binary-safe diff from the base.
- Build debris never comes with it: a file the product adds is left out when the task's
  repository ignores it (its `.gitignore` files and `.git/info/exclude`), or when it matches
  `workspaces.debris.DEBRIS` or the task's or the arm's own `debris` patterns.
- The product's changes to the files holding the task's tests are discarded (`task_tests.py`),
  and the grade says `tests_edited`.
- A product that does not apply is a grade error with git's reason, never a silent
  "not resolved".
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread

from swarmflow.core import safe_paths
from swarmflow.experiments.checkouts import checkout, final_diff
from swarmflow.workspaces.debris import debris_among
from swarmflow.workspaces.git import git, git_result, git_succeeds

DIFF = ("diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv")


@dataclass(frozen=True, slots=True)
class Applied:
    """What became of a product on the fresh checkout."""

    problem: str | None = None
    """Why it does not apply (None: it applied)."""
    left_out: tuple[str, ...] = ()
    """The build debris left out of it."""
    tests_edited: tuple[str, ...] = ()
    """The test files whose changes were discarded."""


def patch_diff(output: object) -> str | None:
    """The diff of a `Patch` output (as the run recorded it, or the object), else None."""
    value = _patch_field(output, "diff")
    return value if isinstance(value, str) else None


def _patch_field(output: object, name: str) -> object:
    found = output.get("patch", output) if isinstance(output, dict) else output
    if isinstance(found, dict):
        return found.get(name)
    return getattr(getattr(found, "patch", found), name, None)


async def product_diff(output: object, run_checkout: Path | None, base: str) -> str:
    """The run's product as a binary-safe diff from `base` ('' for none)."""
    commit = _patch_field(output, "commit")
    if isinstance(commit, str) and commit and await _holds(run_checkout, commit):
        assert run_checkout is not None
        return await git(run_checkout, *DIFF, base, commit, "--")
    diff = patch_diff(output)
    if diff is not None:
        return diff
    return "" if run_checkout is None else await final_diff(run_checkout, base)


async def _holds(run_checkout: Path | None, commit: str) -> bool:
    """Whether the run's checkout holds `commit` (a worktree's commits live in its store)."""
    if run_checkout is None:
        return False
    return await git_succeeds(run_checkout, "cat-file", "-e", f"{commit}^{{commit}}")


@dataclass(frozen=True, slots=True)
class ProductRules:
    """What to leave out of a product, besides what the task's repository ignores."""

    debris: Sequence[str] = ()
    """More debris patterns (the task's and the arm's)."""
    tests: Callable[[list[str]], Iterable[str]] | None = None
    """`paths -> the test files among them` when the tests are restored, else None."""


async def apply_product(
    repo: Path, base: str, diff_text: str, where: Path, rules: ProductRules
) -> Applied:
    """A fresh checkout of `repo` at `base` in `where`, with the product applied by the rules."""
    await anyio.to_thread.run_sync(lambda: shutil.rmtree(where, ignore_errors=True))
    await checkout(repo, base, where)
    if not diff_text.strip():
        return Applied()
    data = diff_text.encode("utf-8")
    code, listed, err = await git_result(where, "apply", "--numstat", "-z", "-", data=data)
    if code != 0:
        return Applied(f"the product is not a patch git can read: {_first_line(err)}")
    changed = _numstat_paths(listed)
    tracked = set(filter(None, (await git(where, "ls-files", "-z")).split("\0")))
    added = [p for p in changed if p not in tracked]
    debris = debris_among(added, rules.debris)
    debris += await _ignored(repo, [p for p in added if p not in debris])
    excludes = [f"--exclude={_literal(p)}" for p in sorted(debris)]
    code, _, err = await git_result(
        where, "apply", "--binary", "--whitespace=nowarn", *excludes, "-", data=data
    )
    if code != 0:
        problem = f"the product does not apply at the base commit: {err.strip()}"
        return Applied(problem, tuple(sorted(debris)))
    try:
        edited = await _restore_tests(where, rules.tests) if rules.tests is not None else ()
    except safe_paths.UnsafePath as exc:  # the task's tests cannot be put back as they were
        return Applied(f"the task's test files cannot be restored: {exc}", tuple(sorted(debris)))
    return Applied(None, tuple(sorted(debris)), edited)


async def _restore_tests(
    where: Path, tests: Callable[[list[str]], Iterable[str]]
) -> tuple[str, ...]:
    """Put the task's test files back as the base has them, whatever the product did to them
    (changed, removed, renamed away, or added new ones); the paths it had touched."""
    await git(where, "add", "-A")
    listed = await git(where, "diff", "--cached", "--name-status", "--no-renames", "-z", "HEAD")
    fields = [f for f in listed.split("\0") if f]
    status = dict(zip(fields[1::2], fields[0::2], strict=True))
    edited = sorted(tests(list(status)))
    if edited:
        names = "".join(f"{p}\0" for p in edited).encode("utf-8")
        args = ("--pathspec-from-file=-", "--pathspec-file-nul")
        await git(where, "--literal-pathspecs", "reset", "--quiet", "HEAD", *args, data=names)
        new = [p for p in edited if status[p] == "A"]
        await anyio.to_thread.run_sync(_remove, where, new)
        kept = "".join(f"{p}\0" for p in edited if status[p] != "A").encode("utf-8")
        if kept:
            await git(where, "--literal-pathspecs", "checkout", "HEAD", *args, data=kept)
    return tuple(edited)


def _remove(root: Path, paths: list[str]) -> None:
    """Remove the new files at `paths` (git's own paths, under `root`) through the safe-path
    layer: a link is removed, never followed, and a link on the way is refused."""
    for path in paths:
        safe_paths.remove(root, path)


def _numstat_paths(listed: str) -> list[str]:
    """The paths of `git apply --numstat -z` (a rename gives its old and its new path)."""
    fields = listed.split("\0")
    paths: list[str] = []
    i = 0
    while i < len(fields):
        entry = fields[i]
        if entry.count("\t") >= 2:
            path = entry.split("\t", 2)[2]
            if path:
                paths.append(path)
            else:  # a rename: the two paths follow
                paths.extend(p for p in fields[i + 1 : i + 3] if p)
                i += 2
        i += 1
    return paths


async def _ignored(repo: Path, paths: list[str]) -> list[str]:
    """The paths the task's own repository ignores (its ignore files, as its checkout has
    them, and its `.git/info/exclude`, which a clone does not carry)."""
    if not paths:
        return []
    data = "".join(f"{p}\0" for p in paths).encode("utf-8")
    code, out, _ = await git_result(repo, "check-ignore", "--no-index", "-z", "--stdin", data=data)
    return [p for p in out.split("\0") if p] if code == 0 else []


def _literal(path: str) -> str:
    """`path` as a `git apply --exclude` pattern that matches it alone."""
    return re.sub(r"([\\*?\[])", r"\\\1", path)


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["(no message)"])[0]
