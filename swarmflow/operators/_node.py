"""Graph nodes and operator events shared by the operators."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import anyio

from swarmflow.record.events import OperatorFinished, OperatorStarted
from swarmflow.runtime.context import RunContext, Scope, current_run, current_scope, scoped


@contextmanager
def operator_node(
    operator: str,
    label: str = "",
    detail: Mapping[str, object] | None = None,
    *,
    events: bool = True,
) -> Iterator[tuple[RunContext, Scope]]:
    """Open a run-graph node for an operator call, with started/finished events."""
    run = current_run(f"{operator}()")
    parent = current_scope()
    node = run.state.graph.open(operator, parent.branch, parent.node, label or operator)
    # The started and finished events name the node alike, so a reader pairs them.
    named = {"branch": parent.branch, "operator": operator, "node": str(node)}
    if events:
        run.deps.log.emit(OperatorStarted, **named, detail=detail or {})
    ended = Ended()
    try:
        with closing(run, node, ended), scoped(Scope(parent.branch, parent.ledger, node)) as scope:
            yield run, scope
    finally:  # after the node is closed, with how it ended
        if events:
            run.deps.log.emit(OperatorFinished, **named, status=ended.status)


class Ended:
    """How a node's block ended: "ok", "cancelled" or "failed" (set on the way out)."""

    __slots__ = ("status",)

    def __init__(self) -> None:
        self.status = "failed"


@contextmanager
def closing(run: RunContext, node: int, ended: Ended | None = None) -> Iterator[Ended]:
    """Close `node` in the run graph with how the block ended (ok, cancelled or failed)."""
    ended = ended or Ended()
    try:
        yield ended
        ended.status = "ok"
    except anyio.get_cancelled_exc_class():
        ended.status = "cancelled"
        raise
    finally:
        run.state.graph.close(node, ended.status)
