"""Typed identifiers."""

from __future__ import annotations

import itertools
import os
import time
from typing import NewType

RunId = NewType("RunId", str)
SessionId = NewType("SessionId", str)
BranchPath = NewType("BranchPath", str)
AgentName = NewType("AgentName", str)

ROOT_BRANCH = BranchPath("")

_session_counter = itertools.count(1)


def new_run_id() -> RunId:
    """A sortable run id: UTC timestamp plus random suffix."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return RunId(f"{stamp}-{os.urandom(3).hex()}")


def new_session_id(agent: str) -> SessionId:
    """Session ids are unique within a process; the agent name keeps them readable."""
    return SessionId(f"{agent}#{next(_session_counter)}")


def child_branch(parent: str, operator: str, index: int) -> BranchPath:
    """`parallel[2]` under `pipeline[0]` becomes `pipeline[0]/parallel[2]`."""
    segment = f"{operator}[{index}]"
    return BranchPath(f"{parent}/{segment}" if parent else segment)
