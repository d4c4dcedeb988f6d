"""`team(task, lead=...)`: a Team run, one long-lived session per role, the model routing work.

The team's roles are the run's declared agents (or the `roles=` given). The lead gets the task;
a role with `message_agent` messages a teammate's own session along a declared edge and gets
its answer back. The call returns a `TeamResult` when the lead submits, when every role is
idle with nothing pending, when the lead crashes, or at a limit. Faults of the world (a role's
model error, a budget stop) are in the result; mistakes (an unknown lead or role, a bad option)
raise `ConfigError` at once; cancellation follows anyio's rules.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import get_args

import anyio.lowlevel

from swarmflow.core.budget import Limits
from swarmflow.core.errors import ConfigError
from swarmflow.operators._node import operator_node
from swarmflow.runtime.context import RunContext, Scope, current_run
from swarmflow.sessions.handoff import check_outgoing
from swarmflow.sessions.prompts import render_prompt
from swarmflow.teams.result import Listen, TeamResult
from swarmflow.teams.team_run import TeamPlan, TeamRun


async def team(
    task: object,
    /,
    *,
    lead: str,
    roles: Sequence[str] | None = None,
    listen: Listen = "passive",
    limits: Limits | dict[str, float] | int | None = None,
) -> TeamResult:
    """Run a Team on `task`, led by `lead`; returns the lead's answer and every role's account.

    Args:
        task: what the lead is given (checked by the handoff rule like any prompt).
        lead: the declared agent that gets the task and whose submission ends the team.
        roles: the team's members (default: every declared agent); the lead must be one.
        listen: how roles hear board mentions unless their `Agent(listen=...)` says otherwise;
            a role without `wait_for_mention` always hears passively.
        limits: the team's own budget (a child of the caller's; an int is tokens); its
            `seconds` also ends the team with reason "wall clock".

    Raises:
        ConfigError: an unknown lead or role, a lead outside `roles`, a bad `listen`.
        TopologyError: the task holds a product of an agent with no edge to the lead.
    """
    await anyio.lowlevel.checkpoint_if_cancelled()  # inside a cancelled scope nothing is sent
    run = current_run("team()")
    bounds = _limits(limits)
    plan = _plan(run, lead, roles, listen, bounds)
    text = render_prompt(task)
    check_outgoing(run, lead, text, values=task, via="prompt", agent=lead)
    detail = {"lead": lead, "roles": list(plan.roles), "listen": listen}
    with operator_node("team", lead, detail) as (run, scope):
        ledger = scope.ledger if bounds is None else scope.ledger.child("team", bounds)
        team_run = TeamRun(run, Scope(scope.branch, ledger, scope.node), plan)
        return await team_run.run_team(text)


def _plan(
    run: RunContext,
    lead: str,
    roles: Sequence[str] | None,
    listen: str,
    limits: Limits | None,
) -> TeamPlan:
    if listen not in get_args(Listen):
        raise ConfigError(f"team(listen={listen!r}): use 'passive' or 'blocking'", operator="team")
    if isinstance(roles, str):
        raise ConfigError(
            f"team(roles={roles!r}): give a list of agent names, not one string", operator="team"
        )
    members = tuple(run.deps.team.names) if roles is None else tuple(dict.fromkeys(roles))
    for name in (lead, *members):
        _check_declared(run, name)
    if lead not in members:
        raise ConfigError(
            f"team(lead={lead!r}): the lead must be one of the roles ({', '.join(members)})",
            operator="team",
        )
    modes = {name: _mode(run, name, listen) for name in members}
    seconds = None if limits is None else limits.seconds
    return TeamPlan(lead=lead, roles=members, listen=modes, seconds=seconds)


def _mode(run: RunContext, name: str, listen: str) -> Listen:
    """The role's own `listen`, else the team's; a role that cannot call `wait_for_mention`
    cannot block, so it hears passively."""
    agent = run.deps.team.get(name)
    can_block = "wait_for_mention" in agent.tools
    if agent.listen == "blocking" and not can_block:
        raise ConfigError(
            f"agent {name!r} listens 'blocking' but has no wait_for_mention tool to block in",
            agent=name,
            operator="team",
        )
    mode = agent.listen or listen
    return "blocking" if mode == "blocking" and can_block else "passive"


def _check_declared(run: RunContext, name: object) -> None:
    if isinstance(name, str) and run.deps.team.has(name):
        return
    close = difflib.get_close_matches(str(name), run.deps.team.names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(
        f"team(): unknown role {name!r}{hint}; the team declares {', '.join(run.deps.team.names)}",
        operator="team",
        agent=str(name),
    )


def _limits(limits: Limits | dict[str, float] | int | None) -> Limits | None:
    if limits is None:
        return None
    if isinstance(limits, bool) or not isinstance(limits, Limits | dict | int):
        raise ConfigError(
            f"team(limits={limits!r}): give Limits, a mapping such as {{'tokens': 100000}}, "
            "or a token count",
            operator="team",
        )
    return Limits.of_tokens(limits) if isinstance(limits, int) else Limits.coerce(limits)
