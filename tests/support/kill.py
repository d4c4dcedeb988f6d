"""Start a child that prints READY at the point to crash, then kill -9 it there."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Mapping, Sequence


def kill_when_ready(argv: Sequence[str], env: Mapping[str, str], timeout: float = 30) -> None:
    """Run `argv`, wait for its READY line, and SIGKILL it: a crash at a known point."""
    child = subprocess.Popen(list(argv), stdout=subprocess.PIPE, env=dict(env), text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "READY"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=timeout)
        if child.stdout is not None:
            child.stdout.close()
