"""Checks of calls: agents, the operators, built-in functions and imported callables."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from swarmflow.dsl import ast
from swarmflow.dsl.callables import options
from swarmflow.dsl.check_context import HUMAN, Context, Scope, Spend
from swarmflow.dsl.diagnostics import did_you_mean
from swarmflow.dsl.literals import show_quantity
from swarmflow.dsl.values import NOT_SEQUENCES, T, Value, number, sources_of

PARALLEL_KEYWORDS = options("parallel")
PIPELINE_KEYWORDS = options("pipeline")
HUMAN_KEYWORDS = options("human")
TEAM_KEYWORDS = options("team")


class CheckerBase(ABC):
    """State shared by the expression and statement checks; the expression checker fills in
    how values are inferred."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.scope = Scope()
        self.spends: list[Spend] = [Spend()]

    @abstractmethod
    def infer(self, node: Any, *, callable_ok: bool = False) -> Value:
        """The value an expression node stands for."""

    @abstractmethod
    def lambda_value(self, lam: ast.Lambda, params: list[Value]) -> Value:
        """The value a `|x| { ... }` body gives for parameters of the given values."""

    def handoff(self, value: Value, target: str, node: Any, via: str) -> None:
        """The handoff rule, statically: every source of `value` needs an edge to `target`."""
        for source in sorted(value.sources):
            if not self.ctx.allows(source, target):
                self.ctx.error(
                    "handoff",
                    f"{source}'s output reaches {target} here ({via}), but no edge "
                    f"{source} -> {target} is declared; add `edges {source} -> {target}` "
                    f"(declared edges: {self.ctx.shown_edges()})",
                    node,
                )

    def model_ref(self, node: Any, what: str) -> None:
        """`output: Model` and `as Model` name a pydantic model imported with `use`."""
        if not isinstance(node, ast.Name):
            self.ctx.error("misuse", f"{what} takes the name of a model imported with `use`", node)
        elif node.id not in self.ctx.imports:
            self.ctx.error(
                "unknown-name",
                f"unknown model '{node.id}' (import it with "
                f"`use {node.id} from package.module`)"
                f"{did_you_mean(node.id, self.ctx.imports)}",
                node,
            )

    def raw_outcomes(self, value: Value, node: Any) -> None:
        """Outcomes handed to an agent as they are would include the failed ones."""
        if value.type == T.OUTCOMES:
            self.ctx.warning(
                "outcomes",
                "these are outcomes (Ok, Failed, ...): pass them "
                "through compact(...) first so that only usable values are sent",
                node,
            )

    def card_variables(self, agent: str, keywords: list[ast.Keyword], node: Any) -> None:
        """Every variable the agent's card uses must be passed (a missing one fails the run)."""
        given = {kw.name for kw in keywords}
        missing = sorted(self.ctx.agents[agent].card_vars - given)
        if missing:
            shown = ", ".join(f"{m}: ..." for m in missing)
            self.ctx.error(
                "card",
                f"{agent}'s card uses {', '.join(missing)}, which this call "
                f"does not pass; add {shown}",
                node,
            )

    def keywords(
        self, node: Any, allowed: tuple[str, ...], where: str, agents: tuple[str, ...] = ()
    ) -> dict[str, Value]:
        """Check keyword names against `allowed`; returns the values of those not in `agents`
        (options that name agents, checked by the caller)."""
        out: dict[str, Value] = {}
        for kw in node.keywords:
            if kw.name in out:
                self.ctx.error("misuse", f"'{kw.name}' is given twice", kw)
            elif kw.name not in allowed:
                self.ctx.error(
                    "misuse",
                    f"{where} has no option '{kw.name}' (options: "
                    f"{', '.join(allowed)}){did_you_mean(kw.name, allowed)}",
                    kw,
                )
            agent_names = kw.name in agents
            out[kw.name] = (
                Value() if agent_names else self.infer(kw.value, callable_ok=kw.name == "keep")
            )
        return out

    def no_lambdas(self, node: ast.Call, why: str) -> None:
        for lam in node.lambdas:
            self.ctx.error("misuse", why, lam)


class CallChecker(CheckerBase):
    """One method per kind of call: agents, imports and the operators."""

    def _infer_all(self, node: ast.Call) -> frozenset[str]:
        values = [self.infer(a, callable_ok=True) for a in node.args]
        values += [self.infer(k.value, callable_ok=True) for k in node.keywords]
        values += [self.lambda_value(lam, [Value()] * len(lam.params)) for lam in node.lambdas]
        return sources_of(*values)

    def agent_call(self, node: ast.Call, agent: str) -> Value:
        self.ctx.used_agents.add(agent)
        self.no_lambdas(
            node,
            f"an agent call takes no |x| {{ ... }} body; to run {agent} "
            "per item use pipeline(items) |x| { ... }",
        )
        if len(node.args) > 1:
            self.ctx.error(
                "misuse",
                f"{agent}(...) takes one prompt; pass other values as card "
                f"variables: {agent}(prompt, name: value)",
                node.args[1],
            )
        for arg in node.args:
            value = self.infer(arg)
            self.raw_outcomes(value, arg)
            self.handoff(value, agent, arg, "prompt")
        for kw in node.keywords:
            self._agent_keyword(kw, agent)
        self.card_variables(agent, node.keywords, node.func)
        self.spends[-1].add_call(agent, self.ctx.agents[agent].allowance)
        return Value(T.OUTPUT, frozenset({agent}))

    def _agent_keyword(self, kw: ast.Keyword, agent: str) -> None:
        if kw.name == "output":
            self.model_ref(kw.value, "output:")
            return
        value = self.infer(kw.value)
        if kw.name != "workspace":  # lending a workspace is not handing a value over
            self.handoff(value, agent, kw.value, f"card variable '{kw.name}'")

    def python_call(self, node: ast.Call) -> Value:
        return Value(T.UNKNOWN, self._infer_all(node))

    def human_call(self, node: ast.Call) -> Value:
        self.no_lambdas(node, "human(...) takes no |x| { ... } body")
        if not node.args:
            self.ctx.error(
                "misuse", 'human(...) needs a question: human("Approve?", payload)', node.func
            )
        if len(node.args) > 2:
            self.ctx.error(
                "misuse",
                "human(question, payload) takes two values; put more in a list",
                node.args[2],
            )
        for i, arg in enumerate(node.args):
            value = self.infer(arg)
            if i == 0 and value.type in (T.NUMBER, "bool", "none", T.OUTCOMES, T.LIST):
                self.ctx.error("misuse", f"the question must be text, not {value.describe()}", arg)
            self.handoff(value, HUMAN, arg, "question" if i == 0 else "payload")
        options = self.keywords(node, HUMAN_KEYWORDS, "human()")
        self._human_options(node)
        default = options.get("default", Value())
        return Value(T.MODEL if "output" in options else T.UNKNOWN, default.sources)

    def _human_options(self, node: ast.Call) -> None:
        given = {kw.name: kw.value for kw in node.keywords}
        policy = given.get("on_timeout")
        if policy is not None and not (
            isinstance(policy, ast.Str)
            and not policy.values
            and "".join(policy.texts) in ("default", "fail")
        ):
            self.ctx.error("misuse", 'on_timeout is "default" or "fail"', policy)
        if (
            isinstance(policy, ast.Str)
            and "".join(policy.texts) == "default"
            and "default" not in given
        ):
            self.ctx.error("misuse", 'on_timeout: "default" needs default: value', policy)
        if "output" in given:
            self.model_ref(given["output"], "output:")

    def team_call(self, node: ast.Call) -> Value:
        """`team(task, lead: agent, roles: [agents])`: the lead and every role are declared."""
        self.no_lambdas(node, "team(...) takes no |x| { ... } body")
        given = {kw.name: kw.value for kw in node.keywords}
        lead = None
        if "lead" not in given:
            self.ctx.error("misuse", "team(...) needs its lead: team(task, lead: agent)", node.func)
        else:
            lead = self._team_member(given["lead"], "a team's lead is a declared agent")
        roles = self._team_roles(given.get("roles"), lead)
        self.ctx.used_agents.update({*roles, *([lead] if lead else [])})
        if len(node.args) != 1:
            self.ctx.error("misuse", "team(task, lead: agent) takes one task", node.func)
        for arg in node.args:
            value = self.infer(arg)
            self.raw_outcomes(value, arg)
            if lead is not None:
                self.handoff(value, lead, arg, "team task")
        self.keywords(node, TEAM_KEYWORDS, "team()", agents=("lead", "roles"))
        listen = given.get("listen")
        if isinstance(listen, ast.Str) and "".join(listen.texts) not in ("passive", "blocking"):
            self.ctx.error("misuse", 'listen is "passive" or "blocking"', listen)
        if lead is None:
            return Value()
        self.spends[-1].add_call(lead, self.ctx.agents[lead].allowance)
        self.spends[-1].unbounded_tokens = True  # the model decides how many turns a team takes
        return Value(T.UNKNOWN, frozenset({lead}))

    def _team_member(self, node: Any, why: str) -> str | None:
        """The declared agent `node` names bare, or None after saying why not."""
        if not isinstance(node, ast.Name):
            self.ctx.error("misuse", f"{why}, named bare: lead: coder, roles: [coder]", node)
        elif node.id not in self.ctx.agents:
            self.ctx.error(
                "unknown-agent",
                f"unknown agent '{node.id}' ({why}){did_you_mean(node.id, self.ctx.agents)}",
                node,
            )
        else:
            return node.id
        return None

    def _team_roles(self, node: Any, lead: str | None) -> set[str]:
        """The team's roles: those listed, else every declared agent."""
        if node is None:
            return set(self.ctx.agents)
        if not isinstance(node, ast.ListExpr):
            self.ctx.error("misuse", "roles takes a list of agents: roles: [coder, reviewer]", node)
            return set()
        why = "a team's roles are declared agents"
        members = [self._team_member(item, why) for item in node.items]
        if lead is not None and lead not in members and None not in members:
            self.ctx.error("misuse", f"the lead '{lead}' must be one of the roles", node)
        return {m for m in members if m is not None}

    def compact_call(self, node: ast.Call) -> Value:
        self.no_lambdas(
            node,
            "compact takes keep: a predicate or model imported with `use`, not a |x| { ... } body",
        )
        if len(node.args) != 1:
            self.ctx.error("misuse", "compact(outcomes) takes one list", node.func)
            return Value(T.LIST)
        source = self.sequence(node.args[0], "compact")
        self.keywords(node, ("keep",), "compact()")
        keep = next((k.value for k in node.keywords if k.name == "keep"), None)
        if keep is not None and not (isinstance(keep, ast.Name) and keep.id in self.ctx.imports):
            self.ctx.error(
                "misuse", "keep: takes a predicate or pydantic model imported with `use`", keep
            )
        return Value(T.LIST, source.sources, item=source.element())

    def sequence(self, node: Any, operator: str) -> Value:
        """A value an operator iterates over; anything but a sequence is misuse."""
        value = self.infer(node)
        if value.type in NOT_SEQUENCES:
            self.ctx.error(
                "misuse",
                f"{operator}(...) needs a list (or the outcomes of parallel "
                f"or pipeline), but this is {value.describe()}",
                node,
            )
        return value

    def pipeline_call(self, node: ast.Call) -> Value:
        if not node.args:
            self.ctx.error(
                "misuse", "pipeline needs a source: pipeline(items) |x| { ... }", node.func
            )
            return Value(T.OUTCOMES)
        source = self._pipeline_source(node.args[0])
        item = source.element()
        stages = [*node.args[1:], *node.lambdas]
        if not stages:
            self.ctx.error(
                "misuse",
                "pipeline needs at least one stage: pipeline(items) "
                "|x| { ... } or pipeline(items, reviewer)",
                node.func,
            )
        for stage in stages:
            item = self._stage(stage, item)
        self.keywords(node, PIPELINE_KEYWORDS, "pipeline()")
        return Value(T.OUTCOMES, item.sources, item=item)

    def _pipeline_source(self, node: Any) -> Value:
        if ast.is_call(node, "parallel") and any(k.name == "first" for k in node.keywords):
            self.ctx.error(
                "misuse",
                "first: cannot be used when parallel feeds a pipeline "
                "(its branches stream into the first stage)",
                node,
            )
        return self.sequence(node, "pipeline")

    def _stage(self, stage: Any, item: Value) -> Value:
        if isinstance(stage, ast.Lambda):
            if len(stage.params) != 1:
                self.ctx.error("misuse", "a pipeline stage takes one item: |x| { ... }", stage)
            return self.lambda_value(stage, [item] * len(stage.params))
        if isinstance(stage, ast.Name) and stage.id in self.ctx.agents:
            self.ctx.used_agents.add(stage.id)
            self.handoff(item, stage.id, stage, "pipeline stage")
            self.spends[-1].add_call(stage.id, self.ctx.agents[stage.id].allowance)
            return Value(T.OUTPUT, frozenset({stage.id}))
        if isinstance(stage, ast.Name) and stage.id in self.ctx.imports:
            return Value(T.UNKNOWN, item.sources)
        self.ctx.error(
            "misuse",
            "a pipeline stage is an agent, a Python callable imported with `use`, or |x| { ... }",
            stage,
        )
        self.infer(stage)
        return Value()

    def parallel_call(self, node: ast.Call) -> Value:
        n = self._branch_count(node)
        self.keywords(node, PARALLEL_KEYWORDS, "parallel()")
        if len(node.lambdas[0].params) > 1:
            self.ctx.error(
                "misuse",
                "a parallel body takes at most one name, the branch index: |i| { ... }",
                node.lambdas[0],
            )
        self.spends.append(Spend())
        index = number(None if n.bound is None else max(n.bound - 1, 0))
        body = self.lambda_value(node.lambdas[0], [index] * len(node.lambdas[0].params))
        inner = self.spends.pop()
        self.budget_feasible(node, n, inner, f"parallel({n.bound or 0:g})")
        self.spends[-1].absorb(inner, n.bound)
        return Value(T.OUTCOMES, body.sources, item=body)

    def _branch_count(self, node: ast.Call) -> Value:
        if len(node.args) != 1:
            self.ctx.error(
                "misuse", "parallel(n) takes the number of branches: parallel(3) { ... }", node
            )
            for arg in node.args:
                self.infer(arg)
            return number()
        n = self.infer(node.args[0])
        if n.type not in (T.NUMBER, T.UNKNOWN):
            self.ctx.error(
                "misuse",
                f"parallel(n) takes a number of branches; this is {n.describe()}",
                node.args[0],
            )
            return number()
        if n.exact and n.bound is not None and (n.bound < 0 or not float(n.bound).is_integer()):
            self.ctx.error(
                "misuse", "parallel(n) needs a whole number of branches, 0 or more", node.args[0]
            )
        return n

    def budget_call(self, node: ast.Call) -> Value:
        for extra in [*node.args, *node.keywords]:
            self.ctx.error("misuse", "budget() takes nothing between its parentheses", extra)
        return Value(T.SNAPSHOT)

    def budget_feasible(self, node: Any, n: Value, inner: Spend, label: str) -> None:
        """n branches (or rounds) of a body must fit the flow's budget, at the allowances."""
        if n.bound is None or n.bound <= 0:
            return
        tokens, calls = self.ctx.budget.get("tokens"), self.ctx.budget.get("calls")
        if tokens is not None and not inner.unbounded_tokens and inner.tokens * n.bound > tokens:
            self._infeasible(node, n, inner, label, ("tokens", inner.tokens * n.bound, tokens))
        if calls is not None and inner.calls * n.bound > calls:
            self._infeasible(node, n, inner, label, ("calls", inner.calls * n.bound, calls))

    def _infeasible(
        self, node: Any, n: Value, inner: Spend, label: str, gap: tuple[str, float, float]
    ) -> None:
        what, need, have = gap
        per = "round" if label.startswith(("repeat", "for")) else "branch"
        who = ", ".join(f"{a} x{c:g}" for a, c in sorted(inner.agents.items()))
        if what == "tokens":
            each = ", ".join(
                f"{a} {show_quantity(self.ctx.agents[a].allowance or 0, 'count')}"
                for a in sorted(inner.agents)
            )
            detail = f"at allowances of {each}"
        else:
            detail = "at one model call per agent call"
        message = (
            f"{label} may need {show_quantity(need, 'count')} {what} ({who} per "
            f"{per}, {detail}) but the flow's budget is {show_quantity(have, 'count')} "
            f"{what}; lower the {'rounds' if per == 'round' else 'fan-out'} or the allowance, "
            "or raise the budget"
        )
        if n.exact:
            self.ctx.error("budget", message, node)
        else:
            self.ctx.warning("budget", f"{message} (n is at most {n.bound:g} here)", node)
