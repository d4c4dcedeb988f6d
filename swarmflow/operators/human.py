"""`human`: pause for a person through a pluggable channel, with an explicit timeout policy."""

from __future__ import annotations

from typing import Any, Literal

import anyio
from pydantic import BaseModel, ValidationError

from swarmflow.core.errors import ConfigError, HumanError, HumanTimeout, RunPaused
from swarmflow.core.ports import HumanChannel
from swarmflow.core.team import HUMAN
from swarmflow.record.events import HumanAnswered, HumanRequested
from swarmflow.runtime.context import RunContext, current_run, current_scope
from swarmflow.sessions.handoff import check_outgoing, shown_text

_NO_DEFAULT: Any = object()


async def human(
    question: str,
    payload: Any = None,
    *,
    channel: HumanChannel | None = None,
    timeout: float | None = None,
    on_timeout: Literal["default", "fail"] = "fail",
    default: Any = _NO_DEFAULT,
    output: type[Any] | None = None,
) -> Any:
    """Ask a person `question` about `payload` and return the answer.

    The payload's agents need an edge to `human`. With `timeout`, `on_timeout="default"`
    returns `default` and `"fail"` raises `HumanTimeout`. Never returns None silently.
    `output=` converts the answer (a pydantic model validates JSON text or a mapping).
    """
    if on_timeout == "default" and default is _NO_DEFAULT:
        raise ConfigError('human(on_timeout="default") needs default=')
    run, scope = current_run("human()"), current_scope()
    check_outgoing(run, HUMAN, str(question), values=[question, payload], via="human")
    chosen = channel or run.deps.human
    if chosen is None:
        raise HumanError("this run has no human channel")
    shown = _jsonable(payload)
    token = _token(run, scope.branch, question, shown)
    recorded = run.deps.journal.answer(token) if run.deps.journal is not None else None
    node = run.state.graph.open("human", scope.branch, scope.node, "human")
    run.deps.log.emit(
        HumanRequested,
        branch=scope.branch,
        question=question,
        payload=shown,
        channel="journal" if recorded is not None else chosen.name,
        token=token,
    )
    status = "failed"
    try:
        if recorded is not None:  # answered before the run was interrupted: not asked again
            answer, who, timed_out = recorded.answer, recorded.answered_by, False
        else:
            run.deps.write_ahead()  # the question is an external effect: what came before first
            answer, who, timed_out = await _ask(
                run, chosen, question, payload, token=token, timeout=timeout
            )
        if timed_out:
            answer, who = _on_timeout(
                run, scope.branch, question, timeout=timeout, policy=on_timeout, default=default
            )
        else:
            answer = _convert(answer, output, question)
            _remember_answer(run, answer, given=f"{question}\n{shown_text(payload)}")
        # The answer's one record: a resumed run gives it again to this token (its journal
        # reads it from the event log, `record.journal.Recorded.take_event`).
        run.deps.log.emit(
            HumanAnswered,
            branch=scope.branch,
            answer=_jsonable(answer),
            answered_by=who,
            timed_out=timed_out,
            token=token,
        )
        status = "ok"
        return answer
    finally:
        run.state.graph.close(node, status)


async def _ask(
    run: RunContext,
    channel: HumanChannel,
    question: str,
    payload: Any,
    *,
    token: str,
    timeout: float | None,
) -> tuple[Any, str, bool]:
    try:
        with anyio.fail_after(timeout):
            answer, who = await channel.ask(question, payload, token=token, timeout=timeout)
    except TimeoutError:
        return None, "", True
    except RunPaused as paused:  # say how to resume this very run with an answer
        raise RunPaused(
            f"run paused for a human answer to {question!r}; resume with: "
            f"swarmflow resume {run.deps.run_dir} --answer {token}=VALUE",
            token=paused.token,
            question=paused.question,
        ) from None
    if answer is None:
        raise HumanError(f"human channel {channel.name!r} gave no answer to {question!r}")
    return answer, who, False


def _remember_answer(run: RunContext, answer: object, *, given: str) -> None:
    """A person's answer is the product of the `human` node: handing it on to an agent needs
    the edge `human -> agent`, as for any agent's product (what the person was shown and
    echoed back stays its own agents')."""
    tagged = not isinstance(answer, str | int | float | bool) and run.state.product_sources(answer)
    if not tagged and not isinstance(answer, str | int | float | bool):  # not a payload echoed
        run.state.remember_product(answer, frozenset({HUMAN}))
    run.state.fingerprints.add(HUMAN, shown_text(answer), given)


def _on_timeout(
    run: RunContext, branch: str, question: str, *, timeout: float | None, policy: str, default: Any
) -> tuple[Any, str]:
    if policy == "fail":
        run.deps.log.emit(
            HumanAnswered, branch=branch, answer=None, answered_by="timeout", timed_out=True
        )
        raise HumanTimeout(f"nobody answered {question!r} within {timeout}s")
    return default, "default (timeout)"


def _convert(answer: Any, output: type[Any] | None, question: str) -> Any:
    if output is None or isinstance(answer, output):
        return answer
    try:
        if issubclass(output, BaseModel):
            if isinstance(answer, str):
                return output.model_validate_json(answer)
            return output.model_validate(answer)
        return output(answer)
    except (ValidationError, ValueError, TypeError) as exc:
        raise HumanError(
            f"answer to {question!r} is not a valid {output.__name__}: {exc}"
        ) from None


def _token(run: RunContext, branch: str, question: str, shown: object) -> str:
    """Bound to this run, this place in the flow, the question and the payload as shown.

    A resumed run that shows the same payload at the same question gets the same token; a
    payload that changed gets another, so an answer given to one is never applied to the other.
    """
    key = f"{branch}|{question}"
    count = run.state.human_answers.get(key, 0)
    run.state.human_answers[key] = count + 1
    import hashlib  # only when a person is asked; keeps `import swarmflow` cheap
    import json

    payload = json.dumps(shown, sort_keys=True, default=str)
    material = "\x00".join((run.deps.run_id, branch, question, payload, str(count)))
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def _jsonable(value: object) -> object:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict | list):
        return value
    return str(value)
