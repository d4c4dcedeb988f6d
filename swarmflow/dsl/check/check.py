"""`check`: every located problem in a `.swarm` file, errors and warnings, in source order.

The passes: syntax (syntax/parser.py), declarations (decls.py), then the steps in order (here,
on the expression checks of exprs.py). Each pass is linear in the size of the file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from swarmflow.dsl.check.callables import names
from swarmflow.dsl.check.context import (
    CALLABLE_BUILTINS,
    NOT_SEQUENCES,
    TYPES,
    Binding,
    Context,
    Scope,
    Spend,
    T,
    Value,
    item_of,
    merge,
    number,
)
from swarmflow.dsl.check.decls import check_declarations
from swarmflow.dsl.check.exprs import ExprChecker
from swarmflow.dsl.syntax import ast
from swarmflow.dsl.syntax.diagnostics import Diagnostic, NameIndex, sort_key
from swarmflow.dsl.syntax.parser import parse_module

_EFFECTFUL = (ast.Call, ast.Send, ast.Ask)
_RECHECKED_DEPTH = 3
"""Loops nested deeper than this are checked once per round, not twice (linear time)."""
_PURE_CALLS = names("builtin") | {"budget"}
_NOT_MATCHED = TYPES - {T.STRING, T.UNKNOWN, T.MODEL}


@dataclass
class BlockResult:
    """What a block gives: its value (a `return` or a last expression) and whether it returns."""

    value: Value | None = None
    returns: bool = False
    has_return: bool = False


class StepChecker(ExprChecker):
    """Walks `steps { ... }` in order, keeping a scope of the names assigned so far."""

    loop_depth = 0

    def check_steps(self, block: ast.Block) -> BlockResult:
        self.assigned_at, bound = _bindings(block)
        self.known = {*self.ctx.params, *self.ctx.imports, *self.ctx.agents, *CALLABLE_BUILTINS}
        self.name_index = NameIndex([*bound, *self.known])
        return self.block(block)

    def block(self, block: ast.Block, *, lambda_body: bool = False) -> BlockResult:
        result = BlockResult()
        for i, stmt in enumerate(block.stmts):
            if result.returns:
                self.ctx.error(
                    "unreachable",
                    f"this step can never run: it comes after the return on line "
                    f"{block.stmts[i - 1].line}; remove it or move it before",
                    stmt,
                )
                break
            last = i == len(block.stmts) - 1
            outcome = _STATEMENTS[type(stmt)](self, stmt, last and lambda_body)
            result.has_return |= outcome.has_return
            if outcome.returns or (last and isinstance(stmt, ast.ExprStmt)):
                result.value, result.returns = outcome.value, outcome.returns
        return result

    def assign(self, stmt: ast.Assign, _: bool) -> BlockResult:
        value = self.infer(stmt.value)
        if self.own_name(stmt.target):
            self.scope.names[stmt.target.id] = Binding(value, stmt.line)
        return BlockResult()

    def own_name(self, target: ast.Name) -> bool:
        """A name a step gives a value to must not hide an agent, import or built-in."""
        name = target.id
        if name in self.ctx.agents or name in self.ctx.imports or name in CALLABLE_BUILTINS:
            self.ctx.misuse(
                f"'{name}' is already an agent, an import or a built-in; "
                "choose another name for this value",
                target,
            )
            return False
        return True

    def expression(self, stmt: ast.ExprStmt, gives_value: bool) -> BlockResult:
        value, node = self.infer(stmt.value), stmt.value
        pure = isinstance(node, ast.Call) and node.func.id in _PURE_CALLS
        if not gives_value and (pure or not isinstance(node, _EFFECTFUL)):
            self.ctx.warning(
                "no-effect",
                "this expression has no effect; assign it to a name (x = ...) or remove it",
                stmt,
            )
        return BlockResult(value)

    def return_(self, stmt: ast.Return, _: bool) -> BlockResult:
        value = self.infer(stmt.value) if stmt.value is not None else Value(T.NONE)
        return BlockResult(value, returns=True, has_return=True)

    def if_(self, stmt: ast.If, _: bool) -> BlockResult:
        self.infer(stmt.cond)
        return self.branches([stmt.then, stmt.orelse], f"one branch of the if on line {stmt.line}")

    def branches(self, blocks: list[ast.Block | None], where: str) -> BlockResult:
        """Check alternatives (`if`, `match` arms; None: a path that runs nothing)."""
        before = self.scope
        scopes: list[Scope] = []
        results: list[BlockResult] = []
        for block in blocks:
            self.scope = before.child()
            results.append(self.block(block) if block else BlockResult())
            scopes.append(self.scope)
        self.scope = before
        self.join([s for s, r in zip(scopes, results, strict=True) if not r.returns], where)
        returns = all(r.returns for r in results)
        value = next((r.value for r in results if r.value is not None), None)
        return BlockResult(value if returns else None, returns, any(r.has_return for r in results))

    def join(self, falling: list[Scope], where: str) -> None:
        """Names after alternatives: each from every path that falls through, or partial."""
        for name in {n for scope in falling for n in scope.names}:
            found = [s.names.get(name) or self.scope.lookup(name) for s in falling]
            known = [b for b in found if b is not None]
            value = known[0].value
            for other in known[1:]:
                value = merge(value, other.value)
            partial = next((b.partial for b in known if b.partial), None)
            if len(known) < len(found):
                partial = partial or where
            self.scope.names[name] = Binding(value, known[0].line, partial)

    def match(self, stmt: ast.Match, _: bool) -> BlockResult:
        subject = self.infer(stmt.subject)
        self.expect(subject, _NOT_MATCHED, "match compares text", stmt.subject)
        seen: set[str | None] = set()
        for arm in stmt.arms:  # the grammar puts `else` last, once
            if arm.pattern in seen:
                self.ctx.error("duplicate", f'"{arm.pattern}" => is given twice in this match', arm)
            seen.add(arm.pattern)
        if not stmt.arms:
            self.ctx.misuse('a match needs at least one arm: "value" => ...', stmt)
        blocks: list[ast.Block | None] = [a.body for a in stmt.arms]
        if None not in seen:
            blocks.append(None)  # no else: a value no arm names runs nothing
        return self.branches(blocks, f"some arms of the match on line {stmt.line}")

    def loop(self, stmt: ast.Loop, _: bool) -> BlockResult:
        """Rounds of a body: checked once for a round's spend, again for what carries over."""
        bound, label, item = self.loop_bound(stmt)
        before = self.scope
        self.spends.append(Spend())
        body = self.round(stmt, before.child(), item)
        self.fan_out(stmt, bound, self.spends.pop(), label)
        if self.loop_depth < _RECHECKED_DEPTH and body.names:
            # names a round assigns are what the next round reads: check it again with them
            self.spends.append(Spend())
            body = self.round(stmt, _carried(before, body), item)
            self.spends.pop()
        self.scope = before
        certain = stmt.var is None and bound.exact and (bound.bound or 0) >= 1
        if stmt.var is not None:
            body.names.pop(stmt.var.id, None)
        falling = [body] if certain else [body, before.child()]
        self.join(falling, f"the loop on line {stmt.line}, which may run no rounds")
        return BlockResult()

    def round(self, stmt: ast.Loop, scope: Scope, item: Value) -> Scope:
        self.scope = scope
        if stmt.var is not None:
            scope.names[stmt.var.id] = Binding(item, stmt.var.line)
        self.loop_depth += 1
        try:
            self.block(stmt.body)
            if stmt.until is not None:
                self.infer(stmt.until)
        finally:
            self.loop_depth -= 1
        return scope

    def loop_bound(self, stmt: ast.Loop) -> tuple[Value, str, Value]:
        """The most rounds the loop can run (a `for` runs one per item), a label, an item."""
        if stmt.var is not None:
            self.own_name(stmt.var)
            items = self.infer(stmt.over)
            self.expect(items, NOT_SEQUENCES, "for ... in needs a list", stmt.over)
            n = number(items.length, items.length is not None)
            return n, f"for over {items.length} items", item_of(items)
        counted = self.count(stmt.over, "repeat", "rounds")
        if counted is not None and counted.bound is None:
            self.ctx.error(
                "loop-bound",
                "repeat needs a bound that check can see: a number such as 3, or "
                "min(n, 5) or clamp(n, 1, 5) for a number known only at run time",
                stmt.over,
            )
        n = counted or number()
        return n, f"repeat {n.bound:g}" if n.bound is not None else "repeat", Value()

    def session(self, stmt: ast.Session, _: bool) -> BlockResult:
        agent = stmt.agent.id
        known = agent in self.ctx.agents
        if not known:
            note = " (a session is held with a declared agent)"
            self.ctx.unknown(
                "unknown-agent", "agent", agent, self.ctx.agents, stmt.agent, note=note
            )
        for arg in stmt.args:
            self.ctx.misuse("a session takes card variables as name: value", arg)
        for kw in stmt.keywords:
            value = self.infer(kw.value)
            if known:
                self.handoff(value, agent, kw.value, f"card variable '{kw.name}'")
        sessions = self.scope.sessions
        if known:
            self.ctx.used_agents.add(agent)
            self.card_variables(agent, stmt.keywords, stmt.agent)
            self.scope.sessions = (*sessions, agent)
        try:
            return self.block(stmt.body)
        finally:
            self.scope.sessions = sessions

    def lambda_value(self, lam: ast.Lambda, params: list[Value]) -> Value:
        outer = self.scope
        self.scope = outer.child()
        for param, value in zip(lam.params, params, strict=False):
            self.scope.names[param.id] = Binding(value, param.line)
        try:
            result = self.block(lam.body, lambda_body=True)
        finally:
            self.scope = outer
        if result.value is None:
            self.ctx.warning(
                "no-value",
                "this body gives no value; end it with an expression or `return value`",
                lam.body,
            )
            return Value(T.NONE)
        return result.value


_STATEMENTS: dict[type, Callable[[StepChecker, Any, bool], BlockResult]] = {
    ast.Assign: StepChecker.assign,
    ast.ExprStmt: StepChecker.expression,
    ast.Return: StepChecker.return_,
    ast.If: StepChecker.if_,
    ast.Loop: StepChecker.loop,
    ast.Match: StepChecker.match,
    ast.Session: StepChecker.session,
}


def _carried(before: Scope, body: Scope) -> Scope:
    """A scope for a second round: what the first assigned, merged with what came before."""
    scope = before.child()
    for name, binding in body.names.items():
        prior = before.lookup(name)
        value = merge(prior.value, binding.value) if prior else binding.value
        scope.names[name] = Binding(value, binding.line, prior.partial if prior else None)
    return scope


def check_agents_used(module: ast.Module, ctx: Context) -> None:
    """Warn about agents no step uses (nor any used agent can message)."""
    targets: dict[str, set[str]] = {}
    for a, b in ctx.edges:
        targets.setdefault(a, set()).add(b)
    reachable = set(ctx.used_agents)
    frontier = list(reachable)
    while frontier:
        info = ctx.agents.get(agent := frontier.pop())
        if info is not None and "message_agent" in info.tools:
            found = targets.get(agent, set()) - reachable
            reachable |= found
            frontier += found
    for decl in module.agents:
        name = decl.name.id
        if name in ctx.agents and ctx.agents[name].decl is decl and name not in reachable:
            ctx.warning(
                "unused-agent",
                f"agent '{name}' is declared but no step uses it; "
                f"call it, e.g. {name}(task), or remove it",
                decl.name,
            )


def check_returns(module: ast.Module, result: BlockResult, ctx: Context) -> None:
    """A flow that declares an output should return one."""
    flow = module.flows[0] if module.flows else None
    if flow and flow.returns and flow.returns.name != "none" and not result.has_return:
        ctx.warning(
            "no-return",
            f"flow '{flow.name.id}' declares it returns {flow.returns.show()} but no step "
            "returns a value; end the steps with `return value`",
            flow.returns,
        )


def _bindings(block: ast.Block) -> tuple[dict[str, int], set[str]]:
    """Every name the steps assign (not in |x| bodies), with the first line assigning it; and
    every name they bind anywhere: assignments, loop names and |x| parameters."""
    assigned: dict[str, int] = {}
    for item in ast.walk(block, prune=ast.Lambda):
        if isinstance(item, ast.Assign):
            assigned[item.target.id] = min(assigned.get(item.target.id, item.line), item.line)
    bound: set[str] = set()
    for item in ast.walk(block):
        if isinstance(item, ast.Assign):
            bound.add(item.target.id)
        elif isinstance(item, ast.Lambda):
            bound.update(p.id for p in item.params)
        elif isinstance(item, ast.Loop) and item.var is not None:
            bound.add(item.var.id)
    return assigned, bound


@dataclass(frozen=True)
class CheckReport:
    """What one check found, and what the file declares (for the line a clean check prints)."""

    diagnostics: list[Diagnostic]
    flow: str | None = None
    agents: int = 0
    edges: int = 0

    def summary(self) -> str:
        """`flow fix: 3 agents, 4 edges`."""
        agents, edges = _count(self.agents, "agent"), _count(self.edges, "edge")
        return f"flow {self.flow or '?'}: {agents}, {edges}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def check_module(
    module: ast.Module,
    filename: str = "<string>",
    *,
    resolve: bool = False,
    base_dir: str | None = None,
) -> list[Diagnostic]:
    """Problems in a parsed module, sorted by place."""
    return _check_module(module, filename, resolve, base_dir).diagnostics


def _check_module(
    module: ast.Module, filename: str, resolve: bool, base_dir: str | None
) -> CheckReport:
    ctx = Context(filename, base_dir=base_dir)
    check_declarations(module, ctx, resolve=resolve)
    for block in module.steps[:1]:
        check_returns(module, StepChecker(ctx).check_steps(block), ctx)
    check_agents_used(module, ctx)
    flow = module.flows[0].name.id if module.flows else None
    found = sorted(ctx.diagnostics, key=sort_key)
    return CheckReport(found, flow, len(ctx.agents), len(ctx.edges))


def check_report(
    source: str,
    filename: str = "<string>",
    *,
    resolve: bool = False,
    base_dir: str | None = None,
) -> CheckReport:
    """`check_source`'s diagnostics, with what the file declares."""
    module, problems = parse_module(source, filename)
    if module is None:
        return CheckReport(problems)
    report = _check_module(module, filename, resolve, base_dir)
    return replace(report, diagnostics=sorted([*problems, *report.diagnostics], key=sort_key))


def check_source(
    source: str,
    filename: str = "<string>",
    *,
    resolve: bool = False,
    base_dir: str | None = None,
) -> list[Diagnostic]:
    """Every problem in `source`: a syntax error alone, or all the checks' findings."""
    return check_report(source, filename, resolve=resolve, base_dir=base_dir).diagnostics


def check_file(path: str | Path, *, resolve: bool = True) -> list[Diagnostic]:
    """Check a `.swarm` file; the modules `use` names are imported (as the run imports them,
    so that the fields of their models are checked too) unless `resolve=False`."""
    file = Path(path)
    source = file.read_text(encoding="utf-8")
    return check_source(source, str(path), resolve=resolve, base_dir=str(file.parent))
