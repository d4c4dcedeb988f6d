"""How a harness's program is started: sandboxed as `run_shell` is, reaching only the run.

Under bubblewrap (`tools.sandbox`: the workspace read-write, the system and Python read-only,
the run's records hidden, its own PID namespace, a clean environment) the network is unshared,
so the host's loopback is not there. The run serves the metering endpoint and the board on
Unix sockets in a private folder (mode 0700) that is bound into the sandbox at
`/run/swarmflow`; `forward.py`, started first inside, listens on the sandbox's own loopback
(`127.0.0.1:ENDPOINT_PORT`, `BOARD_PORT`) and relays to those sockets. The program can reach
those two endpoints and nothing else: no other host port, no outside network.

Without bubblewrap (`sandbox="none"`, or `"auto"` where it is missing, said once per run) the
endpoints listen on the host's 127.0.0.1 and the program runs on the host, under the
supervisor (`tools.supervisor`) so that the processes it starts die with it, with a scrubbed
environment: it can reach what your user can, the network included.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import shutil
import stat
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from swarmflow.core.harness_spec import Harness
from swarmflow.core.team import Agent
from swarmflow.tools.paths import private_dirs
from swarmflow.tools.sandbox import ShellPolicy, bwrap_argv, sandbox_env
from swarmflow.tools.shell import Launch, scrubbed_env
from swarmflow.tools.shell_limits import ShellLimits

INSIDE = Path("/run/swarmflow")
"""Where the private folder shows inside the sandbox."""
ENDPOINT_PORT = 47801
BOARD_PORT = 47802
_HERE = Path(__file__).resolve().parent
BOARD_COMMANDS = ("create_thread", "send_message", "wait_for_mention", "watch_mentions")


@dataclass(frozen=True, slots=True)
class Private:
    """The folder of one harness call: sockets, task and answer files, the board commands.

    It lies in an outer folder of its own (`swarmflow-harness-*` in the temporary folder),
    beside the `owner` file that says which process made it: only the inner folder is bound
    into the sandbox, so a program can write its folder but never forge its owner. The
    owner holds an exclusive `flock` on that file for as long as the call runs (the kernel
    drops it when the process dies, however): a folder whose lock can be taken belongs to
    no live call, and the next call sweeps it. Nothing is read from the file's text.
    """

    root: Path
    """On the host."""
    seen: Path
    """The same folder as the program sees it (`INSIDE` in the sandbox)."""
    outer: Path
    """The folder that holds `root` and the locked `owner` file."""
    lock: int
    """The descriptor holding the owner's lock (closed by `remove`)."""

    @classmethod
    def made(cls, sandboxed: bool) -> Private:
        _sweep_orphans()
        outer = Path(tempfile.mkdtemp(prefix=_PREFIX))  # mode 0700
        lock = os.open(outer / OWNER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(lock, str(os.getpid()).encode())  # for a person looking; never read back
        root = outer / "call"
        root.mkdir(mode=0o700)
        (root / "bin").mkdir()
        return cls(root, INSIDE if sandboxed else root, outer, lock)

    def remove(self) -> None:
        """Remove the folder, then give up the lock."""
        shutil.rmtree(self.outer, ignore_errors=True)
        os.close(self.lock)

    @property
    def model_socket(self) -> Path:
        return self.root / "model.sock"

    @property
    def board_socket(self) -> Path:
        return self.root / "board.sock"

    def write_board_commands(self) -> None:
        """The four commands, each a shell script running `board_command.py` by its name."""
        script = self.root / "bin" / "board_command.py"
        script.write_bytes((_HERE / "board_command.py").read_bytes())
        shown = self.seen / "bin" / "board_command.py"
        for name in BOARD_COMMANDS:
            path = self.root / "bin" / name
            path.write_text(
                f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -I -S "
                f'{shlex.quote(str(shown))} {name} "$@"\n'
            )
            path.chmod(0o755)

    def write_forwarder(self) -> Path:
        script = self.root / "bin" / "forward.py"
        script.write_bytes((_HERE / "forward.py").read_bytes())
        return self.seen / "bin" / "forward.py"


_PREFIX = "swarmflow-harness-"
OWNER = "owner"


def _sweep_orphans() -> None:
    """Remove the private folders that a killed run's process left: those whose `owner`
    lock nobody holds (never a live call's, whatever its folder holds)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*"):
        try:
            fd = os.open(folder / OWNER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue  # not ours to judge: another user's, or one being made now
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # held: a live call's
        else:
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(fd)


def placeholders(private: Private, base_url: str, harness: Harness, prompt: str) -> dict[str, str]:
    return {
        "task": prompt,
        "task_file": str(private.seen / "task.md"),
        "answer_file": str(private.seen / "answer"),
        "base_url": base_url,
        "model": harness.model_name,
    }


def endpoint_env(
    base_url: str, key: str, board: Mapping[str, str], private: Private
) -> dict[str, str]:
    """What tells the program where its model is (the names OpenAI clients and litellm read)
    and, with the board, where the board is and who it is there."""
    env = {
        "SWARMFLOW_MODEL_URL": base_url,
        "SWARMFLOW_MODEL_KEY": key,
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_BASE": base_url,
        "OPENAI_API_KEY": key,
        "SWARMFLOW_MENTIONS": str(private.seen / "mentions.txt"),
    }
    return env | dict(board)


def sandboxed_launch(
    agent: Agent,
    root: Path,
    *,
    run_dir: Path,
    private: Private,
    argv: list[str],
    env: dict[str, str],
    read_only: tuple[Path, ...] = (),
) -> Launch:
    """The bwrap command line: the private folder bound in, the forwarder, then the program;
    `read_only`: what the workspace needs shown besides itself (a worktree's git directory)."""
    forwarder = private.write_forwarder()
    relays = [f"{ENDPOINT_PORT}={private.seen / 'model.sock'}"]
    if private.board_socket.exists():
        relays.append(f"{BOARD_PORT}={private.seen / 'board.sock'}")
    # The endpoint's key and the board's token go in a file the forwarder reads and removes,
    # never on bwrap's command line, which any process of the user could read.
    handed = private.root / "env.json"
    fd = os.open(handed, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(env, out)
    inner = [
        sys.executable,
        "-I",
        "-S",
        str(forwarder),
        "--env",
        str(private.seen / "env.json"),
        *relays,
        "--",
        *argv,
    ]
    path = f"{private.seen / 'bin'}:{sandbox_env(ShellPolicy())['PATH']}"
    policy = ShellPolicy(
        mode="bwrap", network=agent.network, env=tuple((dict(agent.env) | {"PATH": path}).items())
    )
    hidden = private_dirs(root, run_dir)
    full = bwrap_argv(root, "exec " + shlex.join(inner), policy, read_only, hidden)
    at = full.index("--chdir")
    full[at:at] = ["--bind", str(private.root), str(INSIDE)]
    return Launch(full, sandbox_env(ShellPolicy()), root, sandboxed=True)


def host_launch(
    agent: Agent, root: Path, private: Private, argv: list[str], env: dict[str, str]
) -> Launch:
    """The program on the host, its environment scrubbed of secrets (`process.py` starts it
    under the supervisor)."""
    path = f"{private.root / 'bin'}:{os.environ.get('PATH', '')}"
    full_env = scrubbed_env() | {"PWD": str(root)} | env | dict(agent.env) | {"PATH": path}
    return Launch(argv, full_env, root, sandboxed=False)


def limited(launch: Launch, harness: Harness) -> Launch:
    """The launch under the shell's resource limits (memory, file size, open files, processes
    per process; CPU time for its whole timeout)."""
    return replace(launch, limits=ShellLimits().for_command(harness.timeout))
