"""`swarmflow check file.py:flow` (or `module:flow`): the checks a Python flow allows without
running it (the flow itself is found by `swarmflow.cli.flow_refs`, as every command finds it).

A Python flow's steps are code, so only its declaration can be checked: edges that name no
agent, agents no entry agent reaches, agents the flow's module never names (no string in it
spells their name), and an allowance above the flow's whole token budget. Each problem is
placed where the module declares the thing it is about.
"""

from __future__ import annotations

import ast as pyast
import inspect
from pathlib import Path
from typing import TYPE_CHECKING

from swarmflow.cli.flow_refs import load_python_flow
from swarmflow.dsl.syntax.diagnostics import Diagnostic, Severity, Spot
from swarmflow.dsl.syntax.literals import show_quantity

if TYPE_CHECKING:
    from swarmflow.runtime.flow import Flow

__all__ = ["check_python_flow", "load_python_flow"]  # the flow itself: flow_refs finds it


def check_python_flow(flow: Flow[..., object]) -> tuple[list[Diagnostic], str]:
    """The problems in a Python flow's declaration, and the source of its module."""
    filename = inspect.getsourcefile(flow.fn) or "<python>"
    source = Path(filename).read_text(encoding="utf-8") if Path(filename).is_file() else ""
    places = _string_places(source)
    flow_line = inspect.getsourcelines(flow.fn)[1] if source else 1

    def at(name: str | None, severity: Severity, code: str, message: str) -> Diagnostic:
        line, column = places.get(name or "", (flow_line, 1))
        width = len(name or "") + 2 if name in places else 1  # the quotes included
        return Diagnostic.at(Spot(line, column, width), code, message, filename, severity)

    found = [at(_named(d.message), d.severity, d.code, d.message) for d in flow.team.check()]
    named = set(places)
    called = _called_agents(source) if source else None
    for agent in flow.team.agents:
        if called is not None and agent.name not in called:
            found.append(
                at(
                    agent.name,
                    "warning",
                    "unused-agent",
                    f"agent '{agent.name}' is declared but the flow's module never calls it; "
                    f'call it, e.g. agent("{agent.name}", task), or remove it',
                )
            )
        tokens = flow.limits.tokens
        if agent.allowance is not None and tokens is not None and agent.allowance > tokens:
            found.append(
                at(
                    agent.name if agent.name in named else None,
                    "error",
                    "budget",
                    f"agent '{agent.name}' may spend {show_quantity(agent.allowance)} "
                    f"tokens but the whole flow has {show_quantity(tokens)}",
                )
            )
    return sorted(found, key=lambda d: (d.line, d.column)), source


def _named(message: str) -> str | None:
    """The agent a `Team.check()` message is about (it quotes it)."""
    parts = message.split("'")
    return parts[1] if len(parts) > 2 else None


def _string_places(source: str) -> dict[str, tuple[int, int]]:
    """Where each string constant first appears in the module."""
    places: dict[str, tuple[int, int]] = {}
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return places
    for node in pyast.walk(tree):
        if isinstance(node, pyast.Constant) and isinstance(node.value, str):
            here = (node.lineno, node.col_offset + 1)
            if node.value not in places or here < places[node.value]:
                places[node.value] = here
    return places


def _called_agents(source: str) -> set[str] | None:
    """Agents the module calls: `agent("x", ...)`, `agent_session("x")`, or `x(...)` where
    `x = Agent("x", ...)`. None when the module cannot be read (then nothing is reported)."""
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return None
    called: set[str] = set()
    bound: dict[str, str] = {}
    calls = [n for n in pyast.walk(tree) if isinstance(n, pyast.Call)]
    for call in calls:
        func = _func_name(call)
        first = call.args[0] if call.args else None
        if not (isinstance(first, pyast.Constant) and isinstance(first.value, str)):
            continue
        if func in ("agent", "agent_session"):
            called.add(first.value)
    for node in pyast.walk(tree):
        if isinstance(node, pyast.Assign) and isinstance(node.value, pyast.Call):
            first = node.value.args[0] if node.value.args else None
            if _func_name(node.value) == "Agent" and isinstance(first, pyast.Constant):
                for target in node.targets:
                    if isinstance(target, pyast.Name):
                        bound[target.id] = str(first.value)
    called.update(bound[f] for c in calls if (f := _func_name(c)) in bound)
    return called


def _func_name(call: pyast.Call) -> str:
    func = call.func
    if isinstance(func, pyast.Attribute):
        return func.attr
    return func.id if isinstance(func, pyast.Name) else ""
