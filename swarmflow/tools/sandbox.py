"""The shell sandbox: `run_shell` commands under bubblewrap (`bwrap`).

Inside the sandbox a command sees:
- the workspace, read-write, at its own path; its `.git` directory, and a worktree's common
  git directory, read-only and only in part: what `git status`, `git diff` and `git log`
  read, with a config cut down to what git needs, so a token in a remote URL is not there
  (`sandbox_git`);
- the system (`/usr` and its links, a few files of `/etc`) and the Python environment that
  runs swarmflow, read-only;
- the runs root and the run's directory, where the workspace holds them, as empty read-only
  folders: no journal, event log or board token of any run is there to read or rewrite;
- a private `/tmp` (also `$HOME`), `/proc` of its own PID namespace, a minimal `/dev`;
- no network unless the agent declares `network=True`;
- an environment holding only PATH, HOME, LANG, the quiet-pager variables and what the agent
  declares in `env`.
Nothing else of the host is there: no home directory, no other repository, no parent process.
When the command's first process exits or is killed, the namespace's init dies and the
kernel kills every other process in it, `setsid` ones included.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from swarmflow.tools.sandbox_git import git_dir_view, is_git_dir

SandboxMode = Literal["auto", "bwrap", "none"]
INSTALL_HINT = "install it with `apt-get install bubblewrap` (Debian/Ubuntu)"
SANDBOX_HOME = "/tmp"
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
# Pagers and credential prompts would wait forever on a pipe nobody types into.
QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The few files of /etc that programs need to start, find libraries, tell the time, and (with
# the network allowed) resolve names and check certificates. No passwd, no shadow, no ssh.
_ETC = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "mime.types",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "nsswitch.conf",
    "host.conf",
    "hosts",
    "resolv.conf",
    "gai.conf",
    "protocols",
    "services",
)


@dataclass(frozen=True, slots=True)
class ShellPolicy:
    """How one agent's shell runs: sandbox mode, network access and declared environment."""

    mode: SandboxMode = "auto"
    network: bool = False
    env: tuple[tuple[str, str], ...] = ()


def policy_from(declaration: object) -> ShellPolicy:
    """The policy an agent declaration asks for (defaults when there is none)."""
    if declaration is None:
        return ShellPolicy()
    return ShellPolicy(
        mode=getattr(declaration, "sandbox", "auto"),
        network=bool(getattr(declaration, "network", False)),
        env=tuple(getattr(declaration, "env", ())),
    )


@functools.cache
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot sandbox commands here, or None when it can (probed once)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}"
    probe = [exe, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not be started: {exc}"
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", errors="replace").strip()
        return f"bubblewrap cannot create namespaces on this machine: {err or done.returncode}"
    return None


def sandbox_env(policy: ShellPolicy) -> dict[str, str]:
    """The whole environment of a sandboxed command."""
    env = {"PATH": _python_bin() + ":" + SANDBOX_PATH, "HOME": SANDBOX_HOME}
    env |= {"LANG": "C.UTF-8", "TERM": "dumb", "TMPDIR": "/tmp"} | QUIET_ENV
    if sys.prefix != sys.base_prefix:
        env["VIRTUAL_ENV"] = sys.prefix
    return env | dict(policy.env)


def bwrap_argv(
    root: Path,
    command: str,
    policy: ShellPolicy,
    read_only: Iterable[Path] = (),
    hidden: Iterable[Path] = (),
) -> list[str]:
    """The bwrap command line that runs `command` with /bin/sh in the sandbox; each `hidden`
    folder (inside the workspace) is shown empty and read-only."""
    exe = shutil.which("bwrap") or "bwrap"
    argv = [exe, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    argv += ["--hostname", "sandbox"]
    if policy.network:
        argv.append("--share-net")
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    argv += _system_binds()
    argv += _mounts(root, read_only)
    argv += _hiding(hidden)
    argv += ["--chdir", str(root), "--clearenv"]
    for name, value in sandbox_env(policy).items():
        argv += ["--setenv", name, value]
    return [*argv, "/bin/sh", "-c", command]


def _system_binds() -> list[str]:
    """Read-only binds of the system directories (links, as on merged-/usr systems, as links)."""
    out: list[str] = []
    for top in _SYSTEM:
        path = Path(top)
        if path.is_symlink():
            out += ["--symlink", os.readlink(path), top]
        elif path.is_dir():
            out += ["--ro-bind", top, top]
    for name in _ETC:
        path = Path("/etc") / name
        if path.exists():
            out += ["--ro-bind", str(path), str(path)]
    return out


def _mounts(root: Path, read_only: Iterable[Path]) -> list[str]:
    """Python read-only, the workspace read-write, its `.git` and `read_only` read-only.

    Mounts go parents first, so a deeper bind (a `.git` inside the workspace, a virtual
    environment inside a repository) lands on top of the one that holds it. A git directory
    is shown as `sandbox_git` shows it, never whole.
    """
    binds: dict[Path, str] = {path: "--ro-bind" for path in _python_dirs()}
    views: dict[Path, list[str]] = {}
    for extra in (Path(p).resolve() for p in read_only):
        if is_git_dir(extra):
            views[extra] = git_dir_view(extra, root)
        else:
            binds[extra] = "--ro-bind"
    binds[root] = "--bind"
    git = root / ".git"
    if git.is_dir() and not git.is_symlink():
        views[git] = git_dir_view(git, root)
    elif git.exists() or git.is_symlink():
        binds[git] = "--ro-bind"
    out: list[str] = []
    for path in sorted({*binds, *views}, key=lambda p: len(p.parts)):
        if path in views:
            out += views[path]
        elif path.exists() and not _redundant(path, binds, root):
            out += [binds[path], str(path), str(path)]
    return out


def _hiding(hidden: Iterable[Path]) -> list[str]:
    """An empty read-only tmpfs over each folder, mounted last so that nothing bound before
    shows through it."""
    out: list[str] = []
    for folder in hidden:
        if folder.is_dir():
            out += ["--tmpfs", str(folder), "--remount-ro", str(folder)]
    return out


def _redundant(path: Path, binds: dict[Path, str], root: Path) -> bool:
    """True for a read-only path that an enclosing read-only bind (or /usr) already shows."""
    if binds[path] != "--ro-bind" or path.is_relative_to(root):
        return False
    holders = [Path("/usr"), *(p for p, how in binds.items() if how == "--ro-bind")]
    return any(path != other and path.is_relative_to(other) for other in holders)


def _python_dirs() -> set[Path]:
    """The directories of the Python that runs swarmflow: its prefixes and its executable."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found.add(os.path.dirname(os.path.realpath(sys.executable)))
    return {Path(p).resolve() for p in found if p}


def _python_bin() -> str:
    """The directory of the running interpreter, first on PATH so `python` means it."""
    return os.path.dirname(sys.executable)
