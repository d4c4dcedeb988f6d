"""`compact`: keep the usable values, drop the rest, and record what was dropped and why."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from swarmflow.core.emptiness import is_empty
from swarmflow.core.errors import ConfigError
from swarmflow.core.outcomes import Cancelled, Empty, Failed, Ok
from swarmflow.core.output import AgentOutput
from swarmflow.record.events import OutcomesCompacted
from swarmflow.runtime.context import current_run, current_scope
from swarmflow.sessions.handoff import sources_of

Keep = Callable[[Any], bool] | type[BaseModel] | None


def compact(outcomes: Iterable[Any], keep: Keep = None) -> list[Any]:
    """The values of the `Ok` outcomes (or plain values) that are not empty and pass `keep`.

    Empty means None, a blank string or an empty patch; `False` and `0` are kept. `keep`
    is a predicate, or a pydantic model the value must validate against (the validated
    instance is what is kept).
    """
    items = _outcomes(outcomes)
    _check_keep(keep)
    run, scope = current_run("compact()"), current_scope()
    node = run.state.graph.open("compact", scope.branch, scope.node)
    kept: list[Any] = []
    dropped: list[dict[str, Any]] = []
    for position, item in enumerate(items):
        value, why = _judge(item, keep)
        if why is None:
            kept.append(value)
        else:
            dropped.append({"index": getattr(item, "index", position), "reason": why})
    run.state.graph.close(node)
    run.deps.log.emit(OutcomesCompacted, branch=scope.branch, kept=len(kept), dropped=dropped)
    return kept


def _outcomes(outcomes: Any) -> list[Any]:
    """The items to judge; a lone value or an unawaited coroutine is a mistake said plainly."""
    if inspect.isawaitable(outcomes):
        _close_unawaited(outcomes)
        raise ConfigError(
            "compact() expected outcomes (a list, as `await parallel(...)` returns), got an "
            f"awaitable {type(outcomes).__name__}: await it first",
            operator="compact",
        )
    if isinstance(outcomes, str | bytes | Ok | Failed | Cancelled | Empty) or not isinstance(
        outcomes, Iterable
    ):
        raise ConfigError(
            f"compact() expected outcomes (a list of Ok, Failed, Cancelled, Empty or plain "
            f"values), got {type(outcomes).__name__} {outcomes!r:.80}",
            operator="compact",
        )
    return list(outcomes)


def _close_unawaited(awaitable: object) -> None:
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()  # no "never awaited" warning on top of the error


def _check_keep(keep: Keep) -> None:
    if keep is None or callable(keep):
        return
    raise ConfigError(
        f"compact(keep=...) expected a predicate or a pydantic model, got {keep!r:.80}",
        operator="compact",
    )


def _judge(item: Any, keep: Keep) -> tuple[Any, str | None]:
    if isinstance(item, Failed):
        return None, f"failed: {type(item.error).__name__}: {item.error}"
    if isinstance(item, Cancelled):
        return None, f"cancelled: {item.reason}"
    if isinstance(item, Empty):
        return None, "empty"
    value = item.value if isinstance(item, Ok) else item
    if is_empty(value):
        return None, "empty"
    return _apply_keep(value, keep)


def _apply_keep(value: Any, keep: Keep) -> tuple[Any, str | None]:
    if keep is None:
        return value, None
    if isinstance(keep, type) and issubclass(keep, BaseModel):
        return _validate(value, keep)
    predicate: Callable[[Any], bool] = keep  # type: ignore[assignment]
    ok = predicate(value)  # a predicate that raises is a mistake in the flow: it fails the run
    return (value, None) if ok else (None, "rejected by keep predicate")


def _validate(value: Any, model: type[BaseModel]) -> tuple[Any, str | None]:
    candidate = value
    if isinstance(value, AgentOutput):
        candidate = value.value if value.value is not None else str(value.text)
    try:
        if isinstance(candidate, str):
            validated = model.model_validate_json(candidate)
        else:
            dumped = candidate.model_dump() if isinstance(candidate, BaseModel) else candidate
            validated = model.model_validate(dumped)
    except ValidationError as exc:
        return None, f"not a valid {model.__name__}: {exc.error_count()} error(s)"
    run = current_run("compact()")
    sources = sources_of(run, value)
    if sources:
        run.state.remember_product(validated, sources)  # validation must not launder provenance
    return validated, None
