"""What a sandboxed command sees of a git directory: what git reads, never its config's secrets.

A repository's `config` can hold a remote URL with a token in it (`https://user:TOKEN@...`),
`http.extraHeader` credentials, or an `include` of a file that does; a command that prints it
puts it into the run's log. So a git directory is never bound whole. The sandbox shows a
read-only tmpfs at its path holding, read-only:

- the entries git reads to show the repository: `HEAD` (and the other `*_HEAD`s), `index`,
  `objects`, `refs`, `packed-refs`, `info`, `logs`, `shallow`, `commondir`, `gitdir`;
- of the `worktrees/` admin directories, only the one of the workspace's own worktree;
- `config` (and `config.worktree`) as sanitised copies: only the keys of the `core`,
  `extensions`, `index` and `i18n` sections that git needs to read the repository (its format,
  object format, file modes), never `core.sshCommand` or `core.askPass`, never an `include`.

`git status`, `git diff`, `git log`, `git show` and `git blame` work in the sandbox. The git
directory is read-only there, so `git add` and `git commit` do not: swarmflow commits a
worktree's changes itself when the agent's call ends. Hooks, other worktrees, submodules'
git directories (`modules/`, each with its own config) and everything else are not there.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

GIT_ENTRIES = (
    "HEAD",
    "ORIG_HEAD",
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "index",
    "objects",
    "refs",
    "packed-refs",
    "info",
    "logs",
    "shallow",
    "commondir",
    "gitdir",
)
"""The entries of a git directory that a sandboxed command sees."""
CONFIG_SECTIONS = ("core", "extensions", "index", "i18n")
"""The config sections kept in the sanitised copy (keys without a subsection only)."""
_DROPPED_KEYS = ("core.sshcommand", "core.askpass")
# Reading a config file must not read the user's own files or follow its includes.
_CONFIG_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}


def is_git_dir(path: Path) -> bool:
    """Whether `path` is a git directory (a repository's `.git`, or a bare one)."""
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()


def git_dir_view(git_dir: Path, workspace: Path) -> list[str]:
    """The bwrap arguments that show `git_dir` as the module says, for `workspace`'s commands."""
    inside = git_dir.resolve()
    out = ["--tmpfs", str(git_dir)]
    for name in GIT_ENTRIES:
        entry = git_dir / name
        # An entry that leads out of the git directory (a planted symlink) is not followed.
        if entry.exists() and entry.resolve().is_relative_to(inside):
            out += ["--ro-bind", str(entry), str(entry)]
    admin = worktree_admin(git_dir, workspace)
    if admin is not None:
        out += ["--ro-bind", str(admin), str(admin)]
    for config in (git_dir / "config", git_dir / "config.worktree", *_admin_config(admin)):
        if config.is_file():
            out += ["--ro-bind", str(sanitised_copy(config)), str(config)]
    return [*out, "--remount-ro", str(git_dir)]


def _admin_config(admin: Path | None) -> tuple[Path, ...]:
    return (admin / "config.worktree",) if admin is not None else ()


def worktree_admin(common: Path, workspace: Path) -> Path | None:
    """The `worktrees/<name>` directory of the worktree at `workspace`, read from the
    `gitdir` files git wrote there (never from the workspace's own `.git` file)."""
    target = (workspace / ".git").resolve()
    for entry in sorted((common / "worktrees").glob("*/gitdir")):
        try:
            named = Path(entry.read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError):
            continue
        if named.resolve() == target:
            return entry.parent
    return None


def sanitised_copy(config: Path) -> Path:
    """A file holding the sanitised copy of `config` (made again when the file changes)."""
    stat = config.stat()
    text = _sanitised(str(config), (stat.st_ino, stat.st_size, stat.st_mtime_ns))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
    folder = _private_dir()
    folder.mkdir(mode=0o700, exist_ok=True)  # again, should a cleaner have removed it
    copy = folder / f"{digest}.config"
    if not copy.is_file():
        partial = copy.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text, encoding="utf-8")
        partial.replace(copy)
    return copy


@functools.lru_cache(maxsize=64)
def _sanitised(config: str, _stamp: tuple[int, int, int]) -> str:
    """The kept keys of `config`, written back in git's config syntax."""
    sections: dict[str, list[str]] = {}
    for key, value in _entries(config):
        section, _, name = key.partition(".")
        if section in CONFIG_SECTIONS and "." not in name and key not in _DROPPED_KEYS:
            line = name if value is None else f"{name} = {_quoted(value)}"
            sections.setdefault(section, []).append(line)
    return "".join(
        f"[{section}]\n" + "".join(f"\t{line}\n" for line in lines)
        for section, lines in sections.items()
    )


def _entries(config: str) -> list[tuple[str, str | None]]:
    """`(key, value)` of every entry of `config`, as git reads the file (None: no value)."""
    git = shutil.which("git")
    if git is None:
        return []  # no git here, and so none in the sandbox either
    argv = [git, "config", "--file", config, "--no-includes", "--list", "-z"]
    env = {"PATH": os.environ.get("PATH", os.defpath), **_CONFIG_ENV}
    done = subprocess.run(argv, capture_output=True, env=env, cwd="/", timeout=30, check=False)
    if done.returncode != 0:
        return []  # a config git cannot read: the sandbox gets an empty one
    entries: list[tuple[str, str | None]] = []
    for item in done.stdout.decode("utf-8", errors="replace").split("\0"):
        if item:
            key, newline, value = item.partition("\n")
            entries.append((key.lower(), value if newline else None))
    return entries


def _quoted(value: str) -> str:
    """`value` as a git config value: as it is when that reads back the same, else quoted."""
    if value and value.strip() == value and not any(c in value for c in '"\\#;\n\t'):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\t", "\\t") + '"'


@functools.cache
def _private_dir() -> Path:
    """A directory of this process's own for the sanitised copies, removed at exit."""
    path = Path(tempfile.mkdtemp(prefix="swarmflow-git-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
