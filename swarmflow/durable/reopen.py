"""The board of a run directory, opened outside its run (`swarmflow board serve RUN_DIR`).

The team is the one the run's flow declares (loaded again from `run.json`, as `resume` does);
the board is rebuilt from the run's events and journal, and whatever happens on it is
appended to the run's event log, so a later `swarmflow resume` finds it there. The handoff check
knows the products of every call the journal records, so smuggling through the served board
is refused as in the run. While the board is served the run directory counts as live: `resume`
and `clean` refuse it, and a live run's directory is refused here (serve that run's board with
`swarmflow run --board-port` instead).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

from swarmflow.core.budget import Ledger, Limits
from swarmflow.core.errors import ConfigError
from swarmflow.core.secrets import secret_values
from swarmflow.core.team import Team
from swarmflow.durable.claims import claim, live_pid, release
from swarmflow.durable.manifest import read_manifest
from swarmflow.durable.run_lock import hold_run, let_go
from swarmflow.durable.run_log import read_run
from swarmflow.record.eventlog import EventLog
from swarmflow.record.files import EVENTS_FILE, JOURNAL_FILE
from swarmflow.record.journal import Journal, Recorded
from swarmflow.record.sinks import JsonlSink
from swarmflow.runtime.context import RunContext
from swarmflow.runtime.deps import RunDeps
from swarmflow.runtime.flow import Flow
from swarmflow.runtime.state import RunState

Compose = Callable[..., RunDeps]
"""Builds the reopened run's dependencies from its id, directory, team, log and journal (the
composition root's `run_deps`, with the rest of what a served board needs bound)."""


def reopen_run(
    run_dir: str | Path, load_flow: Callable[[str], Flow[..., object]], compose: Compose
) -> AbstractAsyncContextManager[RunContext]:
    """Check `run_dir` and load its flow's team; enter the result to get the run's context.

    `load_flow` loads the flow that `run.json` names (the command line's flow references);
    `compose` builds the run's dependencies (`swarmflow.runner.wiring.open_run_board`).

    Raises:
        ConfigError: not a run directory, a live run, or its flow cannot be loaded.
    """
    path = Path(run_dir).resolve()
    if not (path / EVENTS_FILE).exists() or not (path / JOURNAL_FILE).exists():
        raise ConfigError(f"{path} is not a run directory (no {EVENTS_FILE} and {JOURNAL_FILE})")
    pid = live_pid(path)
    if pid is not None:
        raise ConfigError(
            f"run {path.name} is still running (process {pid}); serve its board with "
            "`swarmflow run --board-port` instead"
        )
    reference = str(read_manifest(path).get("flow") or "")
    if not reference:
        raise ConfigError(f"{path} records no flow (no run.json): its team is unknown")
    try:
        flow = load_flow(reference)
    except ConfigError as exc:
        raise ConfigError(f"cannot load the run's flow: {exc}") from None
    return _opened(path, flow.team, compose)


@asynccontextmanager
async def _opened(path: Path, team: Team, compose: Compose) -> AsyncIterator[RunContext]:
    hold_run(path)
    try:
        state, recorded = read_run(path)
    except BaseException:
        let_go(path)
        raise
    run_id = state.run_id or path.name
    log = EventLog(
        run_id,
        [JsonlSink(path / EVENTS_FILE)],
        secrets=secret_values(),
        start_seq=state.next_seq,
        start_t=state.clock,
    )
    journal = Journal(
        run_id, path / JOURNAL_FILE, previous=recorded, scrub=log.redactor.scrub_bytes
    )
    deps = compose(run_id=run_id, run_dir=path, team=team, log=log, journal=journal)
    ctx = RunContext(deps, RunState(Ledger("run", Limits())))
    _know_products(ctx, recorded)
    claim(path)
    try:
        yield ctx
    finally:
        log.close()
        journal.close()
        release(path)


def _know_products(ctx: RunContext, recorded: Recorded) -> None:
    """Fingerprint every product the run's finished calls made (the handoff check's net)."""
    for record in recorded.at.values():
        data, agent = record.data, record.key.agent
        given = _given_as_allowed(ctx, agent, data.given)
        ctx.state.fingerprints.add(agent, data.text, given)
        if data.patch is not None and data.patch.diff:
            ctx.state.fingerprints.add(agent, data.patch.diff, given)


def _given_as_allowed(ctx: RunContext, agent: str, given: str) -> str:
    """A call's journaled prompt, when the handoff rule would have let all of it reach
    `agent`; else nothing. What an agent was given it may pass on (it co-owns a relay), so a
    record changed on disk must not give it another agent's product it could not have had."""
    refused = ctx.state.fingerprints.unreached(
        given, lambda owner: ctx.deps.team.allows(owner, agent)
    )
    return "" if refused else given
