"""Checks of the steps: statements, blocks, scopes, unreachable code and unused agents."""

from __future__ import annotations

from dataclasses import dataclass

from swarmflow.dsl import ast
from swarmflow.dsl.check_context import CALLABLE_BUILTINS, HUMAN, Context
from swarmflow.dsl.check_exprs import ExprChecker
from swarmflow.dsl.check_scope import Binding, Scope
from swarmflow.dsl.diagnostics import did_you_mean
from swarmflow.dsl.values import NONE, Value, merge

_EFFECTFUL = (ast.Call, ast.Parallel, ast.Send, ast.Ask)
_PURE_CALLS = frozenset({"min", "max", "clamp", "len", "str", "int", "float", "round"})


@dataclass
class BlockResult:
    """What a block gives: its value (a `return` or a last expression) and whether it returns."""

    value: Value | None = None
    returns: bool = False
    has_return: bool = False


class StepChecker(ExprChecker):
    """Walks `steps { ... }` in order, keeping a scope of the names assigned so far."""

    def check_steps(self, block: ast.Block) -> BlockResult:
        self.ctx.assigned_at = _assignments(block)
        result = self.block(block, lambda_body=False)
        self.spends.clear()
        return result

    def block(self, block: ast.Block, *, lambda_body: bool) -> BlockResult:
        result = BlockResult()
        ended_at: int | None = None
        for i, stmt in enumerate(block.stmts):
            if ended_at is not None:
                self.ctx.error(
                    "unreachable",
                    f"this step can never run: it comes after the "
                    f"return on line {ended_at}; remove it or move it before",
                    stmt,
                )
                break
            last = i == len(block.stmts) - 1
            outcome = self.statement(stmt, last and lambda_body)
            result.has_return |= outcome.has_return
            if outcome.returns:
                result.value, result.returns, ended_at = outcome.value, True, stmt.line
            elif last and isinstance(stmt, ast.ExprStmt):
                result.value = outcome.value
        return result

    def statement(self, stmt: ast.Stmt, gives_value: bool) -> BlockResult:
        if isinstance(stmt, ast.Assign):
            self.assign(stmt)
        elif isinstance(stmt, ast.ExprStmt):
            return BlockResult(self.expression_statement(stmt, gives_value))
        elif isinstance(stmt, ast.Return):
            value = self.infer(stmt.value) if stmt.value is not None else Value(NONE)
            return BlockResult(value, returns=True, has_return=True)
        elif isinstance(stmt, ast.If):
            return self.if_statement(stmt)
        else:
            return self.session(stmt)
        return BlockResult()

    def assign(self, stmt: ast.Assign) -> None:
        name = stmt.target.id
        value = self.infer(stmt.value)
        if (
            name in self.ctx.agents
            or name in self.ctx.imports
            or name in CALLABLE_BUILTINS
            or name == HUMAN
        ):
            self.ctx.error(
                "misuse",
                f"'{name}' is already an agent, an import or a built-in; "
                "choose another name for this value",
                stmt.target,
            )
            return
        self.scope.names[name] = Binding(value, stmt.line)

    def expression_statement(self, stmt: ast.ExprStmt, gives_value: bool) -> Value:
        value = self.infer(stmt.value)
        node = stmt.value
        pure = isinstance(node, ast.Call) and node.func.id in _PURE_CALLS
        if not gives_value and (pure or not isinstance(node, _EFFECTFUL)):
            self.ctx.warning(
                "no-effect",
                "this expression has no effect; assign it to a name (x = ...) or remove it",
                stmt,
            )
        return value

    def if_statement(self, stmt: ast.If) -> BlockResult:
        self.infer(stmt.cond)
        before = self.scope
        then_scope, else_scope = before.branch(), before.branch()
        self.scope = then_scope
        then = self.block(stmt.then, lambda_body=False)
        self.scope = else_scope
        orelse = self.block(stmt.orelse, lambda_body=False) if stmt.orelse else BlockResult()
        self.scope = before
        self._join(stmt, then_scope, else_scope, then.returns, orelse.returns)
        returns = then.returns and orelse.returns
        value = then.value if returns and then.value is not None else orelse.value
        return BlockResult(
            value if returns else None, returns, then.has_return or orelse.has_return
        )

    def _join(self, stmt: ast.If, a: Scope, b: Scope, a_returns: bool, b_returns: bool) -> None:
        """Names after an `if`: from the branch that falls through, or either branch."""
        if a_returns and not b_returns:
            self.scope.names.update(b.names)
            return
        if b_returns and not a_returns:
            self.scope.names.update(a.names)
            return
        for name in a.names.keys() | b.names.keys():  # only what the branches assigned
            left = a.names.get(name) or self.scope.lookup(name)
            right = b.names.get(name) or self.scope.lookup(name)
            if left is not None and right is not None:
                partial = left.partial_if or right.partial_if
                self.scope.names[name] = Binding(merge(left.value, right.value), left.line, partial)
            else:
                chosen = left or right
                assert chosen is not None
                self.scope.names[name] = Binding(chosen.value, chosen.line, stmt.line)

    def session(self, stmt: ast.Session) -> BlockResult:
        agent = stmt.agent.id
        known = agent in self.ctx.agents
        if not known:
            self.ctx.error(
                "unknown-agent",
                f"unknown agent '{agent}' (a session is held with "
                f"a declared agent){did_you_mean(agent, self.ctx.agents)}",
                stmt.agent,
            )
        else:
            self.ctx.used_agents.add(agent)
        for arg in stmt.args:
            self.ctx.error("misuse", "a session takes card variables as name: value", arg)
        for kw in stmt.keywords:
            value = self.infer(kw.value)
            if known:
                self.handoff(value, agent, kw.value, f"card variable '{kw.name}'")
        if known:
            self.card_variables(agent, stmt.keywords, stmt.agent)
        sessions = self.scope.sessions
        self.scope.sessions = (*sessions, agent) if known else sessions
        try:
            return self.block(stmt.body, lambda_body=False)
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
            return Value(NONE)
        return result.value


def check_agents_used(module: ast.Module, ctx: Context) -> None:
    """Warn about agents no step uses (nor any used agent can message)."""
    reachable = set(ctx.used_agents)
    frontier = list(reachable)
    while frontier:
        agent = frontier.pop()
        info = ctx.agents.get(agent)
        if info is None or "message_agent" not in info.tools:
            continue
        for a, b in ctx.edges:
            if a == agent and b not in reachable:
                reachable.add(b)
                frontier.append(b)
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
    if flow is None or flow.returns is None or flow.returns.name == "none":
        return
    if not result.has_return:
        ctx.warning(
            "no-return",
            f"flow '{flow.name.id}' declares it returns "
            f"{flow.returns.show()} but no step returns a value; end the steps with "
            "`return value`",
            flow.returns,
        )


def _assignments(block: ast.Block) -> dict[str, int]:
    """Every name assigned anywhere in the steps, with the first line that assigns it."""
    found: dict[str, int] = {}
    stack: list[ast.Block] = [block]
    while stack:
        current = stack.pop()
        for stmt in current.stmts:
            if isinstance(stmt, ast.Assign):
                found.setdefault(stmt.target.id, stmt.line)
                found[stmt.target.id] = min(found[stmt.target.id], stmt.line)
            elif isinstance(stmt, ast.If):
                stack.append(stmt.then)
                if stmt.orelse is not None:
                    stack.append(stmt.orelse)
            elif isinstance(stmt, ast.Session):
                stack.append(stmt.body)
    return found
