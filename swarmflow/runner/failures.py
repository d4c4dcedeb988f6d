"""Where a flow went wrong: the flow's own line, and the message `FlowFailed` shows.

A mistake raised deep inside swarmflow (an unknown agent, a card that does not render) is
reported at the line of the flow that asked for it: the innermost frame of the traceback
that belongs neither to swarmflow nor to the libraries it runs on.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path
from typing import NamedTuple

import anyio

from swarmflow.core.errors import is_fault_of_the_world

_OURS = (
    str(Path(__file__).resolve().parents[1]),  # the swarmflow package
    str(Path(anyio.__file__).resolve().parent),
    str(Path(sysconfig.get_paths()["stdlib"]).resolve()),
)


class FlowLine(NamedTuple):
    """A place in the flow's own code."""

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}, in {self.function}"


def flow_line(error: BaseException) -> FlowLine | None:
    """The innermost frame of `error`'s traceback that is the flow's own code, if any."""
    found = None
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if not str(Path(code.co_filename).resolve()).startswith(_OURS):
            found = FlowLine(code.co_filename, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return found


def located(error: BaseException) -> BaseException:
    """`error`, with a note naming the flow's line it came from (shown with its traceback)."""
    where = flow_line(error)
    if where is not None:
        error.add_note(f"raised at the flow's line {where}")
    return error


def failure_message(flow: str, error: BaseException | None) -> str:
    """What `FlowFailed` says: the flow, what went wrong, and the flow's line for a mistake."""
    if error is None:
        return f"flow {flow!r} failed"
    kind = "stopped" if is_fault_of_the_world(error) else "failed"
    message = f"flow {flow!r} {kind}: {type(error).__name__}: {error}"
    where = flow_line(error)
    return f"{message}\n  at {where}" if where is not None else message
