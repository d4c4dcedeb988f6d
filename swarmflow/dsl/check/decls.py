"""Checks of the declarations: signature, imports, budget, agents and edges."""

from __future__ import annotations

import shlex
from pathlib import Path
from types import ModuleType

from swarmflow.core.context_policy import BACKSTOP, DETERMINISTIC_LEVELS, SUMMARISE
from swarmflow.core.harness_spec import Harness
from swarmflow.dsl.check.context import (
    BUILTIN_TYPES,
    CALLABLE_BUILTINS,
    HUMAN,
    OPERATORS,
    AgentInfo,
    Context,
)
from swarmflow.dsl.check.imports import failed, is_missing, load_module
from swarmflow.dsl.syntax import ast
from swarmflow.dsl.syntax.diagnostics import Spot, did_you_mean, listing
from swarmflow.dsl.syntax.literals import show_quantity
from swarmflow.sessions.cards import is_card_path

BUDGET_KEYS = {"tokens": "count", "calls": "count", "cost": "cost", "time": "duration"}
_DIMENSIONS = {"count": "a count such as 2M or 400", "cost": "a cost such as $5"}
_DIMENSIONS["duration"] = "a duration such as 30m or 90s"
AGENT_FIELDS = {
    "card": "card",
    "model": "model",
    "tools": "tools",
    "workspace": "workspace",
    "allowance": "allowance",
    "steps": "max_steps",
    "description": "description",
    "output_tokens": "max_output_tokens",
    "harness": "harness",
    "feedback": "feedback",
    "context": "context",
}
"""Each field of an agent block, with the `Agent(...)` option it sets."""
WORKSPACES = ("none", "local", "worktree", "shared")
FEEDBACK = ("lsp", "off")
"""`feedback lsp`: language-server diagnostics on the agent's edits (docs/feedback.md)."""
WORD_FIELDS = {
    "workspace": (WORKSPACES, "none, local, worktree or shared"),
    "feedback": (FEEDBACK, "lsp, off or none"),
}
"""The fields that take one word of a few, with the choices named when another is given."""
CONTEXT_LEVELS = (*DETERMINISTIC_LEVELS, SUMMARISE, BACKSTOP)
"""`context [offload, summarise]`: the built-in context levels an agent may use."""


def check_declarations(module: ast.Module, ctx: Context, *, resolve: bool = False) -> None:
    """Every check that needs no steps; fills `ctx` for the steps check."""
    if not module.flows:
        message = "a .swarm file declares its signature first, e.g. `flow fix(task: str) -> str`"
        ctx.error("missing-flow", message, Spot(1, 1))
    for extra in module.flows[1:]:
        message = f"a file declares one flow; '{extra.name.id}' is a second one"
        ctx.error("duplicate", message, extra)
    if not module.steps:
        message = "this flow has no `steps { ... }` block, so it does nothing"
        ctx.error("missing-steps", message, module.flows[0] if module.flows else Spot(1, 1))
    for steps in module.steps[1:2]:
        message = "a flow has one `steps { ... }` block; merge these into the first one"
        ctx.error("duplicate", message, steps)
    _check_uses(module, ctx, resolve)
    for item in module.budget:
        _check_budget(item, ctx)
    for decl in module.agents:
        _check_agent(decl, ctx)
    _check_params(module, ctx)  # after the agents: an input may not take an agent's name
    for chain in module.edges:
        _check_edges(chain, ctx)


def _check_uses(module: ast.Module, ctx: Context, resolve: bool) -> None:
    taken = {d.name.id for d in module.agents} | set(CALLABLE_BUILTINS) | set(OPERATORS)
    for use in module.uses:
        loaded = _load(use, ctx) if resolve else None
        for item in use.names:
            local = item.local
            if local.id in ctx.imports or local.id in taken:
                ctx.error(
                    "duplicate",
                    f"'{local.id}' is already defined; import it under "
                    f"another name: `use {item.name.id} as other from {use.module}`",
                    local,
                )
                continue
            ctx.imports[local.id] = item
            if loaded is not None:
                _resolve(item, use.module, loaded, ctx)


def _load(use: ast.UseDecl, ctx: Context) -> ModuleType | None:
    """The module `use` names, imported as the run imports it (None: it cannot be, said)."""
    try:
        return load_module(use.module, ctx.base_dir)
    except ModuleNotFoundError as exc:
        if is_missing(exc, use.module):
            ctx.error(
                "unknown-module",
                f"cannot find Python module '{use.module}'; check the spelling, and that its "
                "package is installed, on PYTHONPATH, or a .py file next to this flow",
                use,
            )
            return None
        problem: Exception = exc
    except Exception as exc:  # the module's own code failed: the run would fail there too
        problem = exc
    ctx.error("import", f"{failed(use.module, problem)}; the run would fail the same way", use)
    return None


def _resolve(item: ast.UseName, module: str, loaded: ModuleType, ctx: Context) -> None:
    """What `item` names in `loaded`; a name the module lacks is an error, as in the run."""
    name = item.name.id
    try:
        ctx.resolved[item.local.id] = getattr(loaded, name)
    except AttributeError:
        public = [n for n in dir(loaded) if not n.startswith("_")]
        note = f" in module '{module}'"
        ctx.unknown("unknown-name", "name", name, public, item.name, note=note)


def _check_params(module: ast.Module, ctx: Context) -> None:
    types = {*BUILTIN_TYPES, *ctx.imports}
    for flow in module.flows[:1]:
        for param in flow.params:
            name = param.name.id
            if name in ctx.params:
                ctx.error("duplicate", f"input '{name}' is declared twice", param.name)
            elif name in ctx.agents or name in ctx.imports:
                message = f"input '{name}' has the name of an agent or import; rename it"
                ctx.error("duplicate", message, param.name)
            ctx.params[name] = param
            _check_type(param.type, types, ctx)
            if param.default is not None and not _is_literal(param.default):
                ctx.error(
                    "bad-default",
                    f"the default of '{name}' must be a plain value such as 3, \"text\", "
                    "true or none",
                    param.default,
                )
        if flow.returns is not None:
            _check_type(flow.returns, types, ctx)


def _check_type(ref: ast.TypeRef, types: set[str], ctx: Context) -> None:
    if ref.name not in types:
        note = f" (use {', '.join(BUILTIN_TYPES)} or a model imported with `use`)"
        ctx.unknown("unknown-type", "type", ref.name, types, ref, note=note)
    for arg in ref.args:
        _check_type(arg, types, ctx)


def _is_literal(node: ast.Expr) -> bool:
    if isinstance(node, ast.Str):
        return not node.values
    if isinstance(node, ast.ListExpr):
        return all(_is_literal(i) for i in node.items)
    return isinstance(node, ast.Number | ast.Const)


def _check_budget(item: ast.BudgetItem, ctx: Context) -> None:
    key, value = item.key.id, item.value
    want = BUDGET_KEYS.get(key)
    if want is None:
        note = " (use tokens, calls, cost or time)"
        ctx.unknown("budget", "budget", key, BUDGET_KEYS, item.key, note=note)
    elif key in ctx.budget:
        ctx.error("duplicate", f"budget '{key}' is given twice", item.key)
    elif value.dimension != want:
        ctx.error("unit", f"budget '{key}' takes {_DIMENSIONS[want]}, not {value.text}", value)
    elif value.value <= 0:
        ctx.error("budget", f"budget '{key}' must be more than zero", value)
    elif want == "count" and not float(value.value).is_integer():
        ctx.error("budget", f"budget '{key}' must be a whole number, not {value.text}", value)
    else:
        ctx.budget[key] = value.value


def _check_agent(decl: ast.AgentDecl, ctx: Context) -> None:
    name = decl.name.id
    if name == HUMAN:
        message = "'human' is the built-in person node; choose another agent name"
        ctx.error("reserved", message, decl.name)
        return
    if name in ctx.agents:
        ctx.error("duplicate", f"agent '{name}' is declared twice", decl.name)
        return
    if name in CALLABLE_BUILTINS or name in OPERATORS:
        ctx.error("reserved", f"'{name}' is a built-in; choose another agent name", decl.name)
        return
    info = AgentInfo(decl)
    seen: set[str] = set()
    for fld in decl.fields:
        key = fld.key.id
        if key in seen:
            ctx.error("duplicate", f"field '{key}' is given twice in agent '{name}'", fld.key)
        seen.add(key)
        if key not in AGENT_FIELDS:
            note = f" (fields: {', '.join(AGENT_FIELDS)})"
            ctx.unknown("agent-field", "agent field", key, AGENT_FIELDS, fld.key, note=note)
        elif key == "harness":
            _check_harness(fld.value, ctx)
        else:
            _check_field(key, fld.value, info, ctx)
    _check_harness_workspace(decl, ctx)
    ctx.agents[name] = info


def _word_problem(key: str, value: ast.FieldValue) -> str | None:
    """What is wrong with the word given to `workspace` or `feedback`, or None."""
    word = value.id if isinstance(value, ast.Name) else ""
    words, choices = WORD_FIELDS[key]
    if word in words:
        return None
    hint = did_you_mean(word, words) if word else ""
    return f"unknown {key} '{word or 'value'}' (use {choices}){hint}"


def _check_field(key: str, value: ast.FieldValue, info: AgentInfo, ctx: Context) -> None:
    problem = None
    if key in ("card", "description") and not isinstance(value, ast.Str):
        problem = f"{key} takes a string"
    elif key == "card" and isinstance(value, ast.Str):
        info.card_vars = _card_vars(_card_text(value, ctx), value, ctx)
    elif key == "model" and not isinstance(value, ast.Str | ast.Name):
        problem = 'model takes a name such as "gpt-4o-mini"'
    elif key == "tools":
        _check_tools(value, info, ctx)
    elif key in WORD_FIELDS and not (isinstance(value, ast.Const) and value.value is None):
        problem = _word_problem(key, value)
    elif key == "context":
        problem = _context_problem(value)
    elif key in ("allowance", "steps", "output_tokens"):
        if not isinstance(value, ast.Number) or value.dimension != "count":
            problem = f"{key} takes a count such as 400k or 30"
        elif value.value <= 0 or not float(value.value).is_integer():
            problem = f"{key} must be a whole number above zero"
        elif key == "allowance":
            info.allowance = value.value
            _check_allowance(info, value, ctx)
    if problem:
        ctx.error("agent-field", problem, value)


def _context_problem(value: ast.FieldValue) -> str | None:
    """`context` takes a list of context levels, or none (only the last resort)."""
    if isinstance(value, ast.Const) and value.value is None:
        return None
    if not isinstance(value, ast.NameList | ast.Name):
        return "context takes a list of context levels such as [offload, summarise], or none"
    names = value.items if isinstance(value, ast.NameList) else [value]
    for name in names:
        if name.id not in CONTEXT_LEVELS:
            return (
                f"unknown context level '{name.id}'{did_you_mean(name.id, CONTEXT_LEVELS)} "
                f"(levels: {', '.join(CONTEXT_LEVELS)})"
            )
    return None


def _check_harness(value: ast.FieldValue, ctx: Context) -> None:
    problem = _harness_problem(value, ctx)
    if problem:
        ctx.error("agent-field", problem, value)


def _harness_problem(value: ast.FieldValue, ctx: Context) -> str | None:
    """`harness` takes a command line (`"prog --task {task}"`) or a `use`d name: a `Harness`,
    or a function that makes one (`use mini_swe_agent from swarmflow.harnesses.templates`)."""
    if isinstance(value, ast.Name):
        if value.id in ctx.imports:
            return None
        return (
            f"harness '{value.id}' is not imported; `use` it (for example `use "
            f"mini_swe_agent from swarmflow.harnesses.templates`) or give a command line"
        )
    if not isinstance(value, ast.Str):
        return 'harness takes a command line such as "my-agent --task {task}" or a used name'
    try:
        Harness(command=tuple(shlex.split("".join(value.texts))))
    except ValueError as exc:
        return f"harness command: {_first_error(exc)}"
    return None


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        found = errors()
        if found:
            return str(found[0]["msg"]).removeprefix("Value error, ")
    return str(exc)


def _check_harness_workspace(decl: ast.AgentDecl, ctx: Context) -> None:
    fields = {f.key.id: f.value for f in decl.fields}
    if "harness" not in fields:
        return
    where = fields.get("workspace")
    if isinstance(where, ast.Name) and where.id != "none":
        return
    message = (
        f"agent '{decl.name.id}' runs a harness, which works in a workspace: add "
        "`workspace worktree` (or local, shared)"
    )
    ctx.error("agent-field", message, where if where is not None else decl.name)


def _card_text(value: ast.Str, ctx: Context) -> str:
    """The card's template: the text itself, or the file it names (if it can be found)."""
    text = "".join(value.texts)
    if not is_card_path(text):
        return text
    for candidate in ([Path(ctx.base_dir) / text] if ctx.base_dir else []) + [Path(text)]:
        try:
            return candidate.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    if ctx.base_dir is not None:
        ctx.warning(
            "card",
            f"card file '{text}' is not next to this file nor in the current "
            "folder; the run will fail to load it",
            value,
        )
    return ""


def _card_vars(template: str, value: ast.Str, ctx: Context) -> frozenset[str]:
    """Names a Jinja card reads and does not bind itself; a broken template is an error."""
    import jinja2
    import jinja2.meta

    try:
        parsed = jinja2.Environment().parse(template)
    except jinja2.TemplateSyntaxError as exc:
        reason = (exc.message or "").rstrip(".")
        ctx.error("card", f"line {exc.lineno} of this card is not valid Jinja: {reason}", value)
        return frozenset()
    return frozenset(jinja2.meta.find_undeclared_variables(parsed))


def _check_tools(value: ast.FieldValue, info: AgentInfo, ctx: Context) -> None:
    if not isinstance(value, ast.NameList):
        ctx.error("agent-field", "tools takes a list such as [read_file, edit]", value)
        return
    for tool in value.items:
        if tool.id not in ctx.tools and tool.id not in ctx.imports:  # `use`d: a Python tool
            note = f" (tools: {listing(sorted(ctx.tools))})"
            ctx.unknown("unknown-tool", "tool", tool.id, ctx.tools, tool, note=note)
    info.tools = tuple(t.id for t in value.items)


def _check_allowance(info: AgentInfo, value: ast.Number, ctx: Context) -> None:
    tokens = ctx.budget.get("tokens")
    if tokens is not None and value.value > tokens:
        ctx.warning(
            "budget",
            f"agent '{info.decl.name.id}' may spend {show_quantity(value.value)} "
            f"tokens but the whole flow has {show_quantity(tokens)}",
            value,
        )


def _check_edges(chain: ast.EdgeChain, ctx: Context) -> None:
    # Tested against the agents as they are: a file may hold 200,000 edges.
    unknown = [node for node in chain.names if node.id not in ctx.agents and node.id != HUMAN]
    for node in unknown:
        note = f" in edges (declared: {listing(sorted(ctx.agents))})"
        ctx.unknown("unknown-agent", "agent", node.id, {*ctx.agents, HUMAN}, node, note=note)
    for a, b in [] if unknown else chain.pairs():
        if a.id == b.id:
            message = f"edge {a.id} -> {b.id} is not needed: an agent may always use its own output"
            ctx.warning("edge", message, b)
        elif (a.id, b.id) in ctx.edges:
            ctx.warning("edge", f"edge {a.id} -> {b.id} is declared twice", b)
        ctx.edges.add((a.id, b.id))
