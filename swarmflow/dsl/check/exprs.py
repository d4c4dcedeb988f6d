"""Checks of expressions and calls: names, attributes, operators, templates, the built-in
functions (from their entries in the callables table), the operators, agents and imports."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from swarmflow.core.errors import ConfigError
from swarmflow.dsl.check.callables import clamp, options, table
from swarmflow.dsl.check.context import (
    BUILTIN_TYPES,
    CALLABLE_BUILTINS,
    HUMAN,
    NOT_NUMBERS,
    NOT_SEQUENCES,
    OPERATORS,
    Context,
    Scope,
    Spend,
    T,
    Value,
    item_of,
    merge,
    number,
    sources_of,
)
from swarmflow.dsl.check.imports import not_model
from swarmflow.dsl.check.models import (
    attribute_value,
    field_names,
    has_attribute,
    is_model,
    suggestions,
)
from swarmflow.dsl.syntax import ast
from swarmflow.dsl.syntax.diagnostics import NameIndex, did_you_mean, listing, suggest
from swarmflow.dsl.syntax.literals import show_quantity
from swarmflow.operators.parallel import check_count

_ORDERING = frozenset({"<", "<=", ">", ">="})
_NOT_ARITHMETIC = frozenset({T.OUTPUT, T.SNAPSHOT, T.OUTCOMES, T.NONE, T.BOOL, T.MODEL})
_NOT_TEXT = frozenset({T.NUMBER, T.BOOL, T.NONE, T.OUTCOMES, T.LIST})
_NOT_ORDERED = frozenset({T.OUTPUT, T.SNAPSHOT, T.LIST, T.OUTCOMES, T.NONE})
_NO_ATTRIBUTES = frozenset({T.NUMBER, T.BOOL, T.NONE, T.STRING, T.AGENT, T.CALLABLE})
_NOT_INDEXED = frozenset({T.NUMBER, T.BOOL, T.NONE, T.OUTPUT, T.SNAPSHOT, T.AGENT, T.CALLABLE})
_PARAM_KINDS = {  # what each kind of built-in parameter refuses, and how to say so
    "number": (NOT_NUMBERS - {T.LIST, T.OUTCOMES}, "works on numbers"),
    "sized": (NOT_SEQUENCES - {T.STRING}, "needs a list or text"),
    "any": (frozenset[str](), ""),
}
SNAPSHOT_FIELDS = {"tokens": "tokens", "cost": "cost", "calls": "calls", "seconds": "time"}
SNAPSHOT_FIELDS.update(dict.fromkeys(("spent_tokens", "spent_cost", "spent_calls"), ""))
OUTPUT_FIELDS = {"text": T.STRING, "value": T.UNKNOWN, "patch": T.UNKNOWN, "agent": T.STRING}
OUTPUT_FIELDS.update(session=T.STRING, state=T.STRING, reason=T.STRING, ok=T.BOOL)
OUTPUT_FIELDS.update(detail=T.STRING, usage=T.UNKNOWN)
OUTPUT_CONTENT = frozenset({"text", "value", "patch", "detail"})
"""Fields of an agent output that carry what the agent wrote (and so its provenance)."""


class ExprChecker(ABC):
    """`infer(node)`: the value of an expression, reporting what is wrong with it. The
    statement checker fills in how a `|x| { ... }` body is checked."""

    assigned_at: dict[str, int]
    """Each name the steps assign, with the first line assigning it (for used-before)."""
    known: set[str]
    """Every name a step may refer to, before its own variables."""
    name_index: NameIndex
    """Those and every name the steps bind, for did-you-mean in linear time."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.scope = Scope()
        self.spends: list[Spend] = [Spend()]

    @abstractmethod
    def lambda_value(self, lam: ast.Lambda, params: list[Value]) -> Value:
        """The value a `|x| { ... }` body gives for parameters of the given values."""

    def infer(self, node: ast.Node, *, callable_ok: bool = False) -> Value:
        if isinstance(node, ast.Name):
            return self.name(node, callable_ok)
        method = _DISPATCH.get(type(node))
        # no method: a Lambda in a value position, say, already reported elsewhere
        return method(self, node) if method else Value()

    def expect(self, value: Value, refused: Iterable[str], what: str, node: ast.Node) -> bool:
        """Whether `value` is of a type `what` takes; if not, say so at `node`."""
        if value.type not in refused:
            return True
        hint = " (use .text for its text)" if value.type == T.OUTPUT else ""
        self.ctx.misuse(f"{what}; this is {value.type}{hint}", node)
        return False

    def infer_all(self, node: ast.Call) -> frozenset[str]:
        values = [self.infer(a, callable_ok=True) for a in node.args]
        values += [self.infer(k.value, callable_ok=True) for k in node.keywords]
        values += [self.lambda_value(lam, [Value()] * len(lam.params)) for lam in node.lambdas]
        return sources_of(values)

    # --- names and simple values

    def name(self, node: ast.Name, callable_ok: bool) -> Value:
        found = self.scope.lookup(node.id)
        if found is not None:
            if found.partial is not None:
                self.ctx.warning(
                    "maybe-unassigned",
                    f"'{node.id}' may have no value here: it is only assigned in {found.partial}",
                    node,
                )
            return found.value
        name = node.id
        if name in self.ctx.params:
            return Value(BUILTIN_TYPES.get(self.ctx.params[name].type.name, T.UNKNOWN))
        if name in self.ctx.imports:
            return Value(T.CALLABLE)
        if name in self.ctx.agents:
            if callable_ok:
                self.ctx.used_agents.add(name)
                return Value(T.AGENT)
            self.ctx.misuse(f"agent '{name}' is called, not used as a value: {name}(prompt)", node)
        elif name in CALLABLE_BUILTINS:
            if not callable_ok:
                self.ctx.misuse(f"'{name}' is a built-in; call it: {name}(...)", node)
            return Value(T.CALLABLE)
        elif name in self.assigned_at:
            self.ctx.error(
                "unknown-name",
                f"'{name}' is used before it has a value "
                f"(it is assigned on line {self.assigned_at[name]})",
                node,
            )
        else:
            close = self.name_index.suggest(
                name, lambda n: n in self.known or self.scope.lookup(n) is not None
            )
            hint = f"; did you mean '{close}'?" if close else ""
            self.ctx.error("unknown-name", f"unknown name '{name}'{hint}", node)
        return Value()

    def list_(self, node: ast.ListExpr) -> Value:
        items = [self.infer(i) for i in node.items]
        item = items[0] if items else Value()
        for other in items[1:]:
            item = merge(item, other)
        return Value(T.LIST, sources_of(items), item=item, length=len(items))

    def attribute(self, node: ast.Attribute) -> Value:
        base, attr = self.infer(node.value), node.attr
        if base.type == T.MODEL and base.model is not None:
            return self.model_attribute(node, base.model, base.sources)
        if base.type == T.OUTPUT and attr == "value" and base.model is not None:
            return Value(T.MODEL, base.sources, model=base.model)  # asked with `output: Model`
        if base.type in (T.SNAPSHOT, T.OUTPUT):
            fields = SNAPSHOT_FIELDS if base.type == T.SNAPSHOT else OUTPUT_FIELDS
            if attr not in fields:
                self.ctx.misuse(
                    f"{base.type} has no '{attr}' (it has "
                    f"{', '.join(fields)}){did_you_mean(attr, fields)}",
                    node,
                )
                return number() if base.type == T.SNAPSHOT else Value()
            if base.type == T.SNAPSHOT:
                return number(self.ctx.budget.get(SNAPSHOT_FIELDS[attr]))
            return Value(
                OUTPUT_FIELDS[attr], base.sources if attr in OUTPUT_CONTENT else frozenset()
            )
        if base.type in (T.LIST, T.OUTCOMES):
            self.ctx.misuse(
                f"{base.type} has no '.{attr}'; take one item first, e.g. items[0].{attr}",
                node,
            )
        elif base.type in _NO_ATTRIBUTES:
            self.ctx.misuse(f"{base.type} has no attribute '{attr}'", node)
        return Value(T.UNKNOWN, base.sources)

    def model_attribute(
        self, node: ast.Attribute, model: type[BaseModel], sources: frozenset[str]
    ) -> Value:
        """`answer.attr` on an instance of one of the flow's own models."""
        if has_attribute(model, node.attr):
            return attribute_value(model, node.attr, sources)
        note = f" of {model.__name__} (its fields: {listing(field_names(model))})"
        self.ctx.unknown("unknown-field", "field", node.attr, suggestions(model), node, note=note)
        return Value(T.UNKNOWN, sources)

    def index(self, node: ast.Index) -> Value:
        base, key = self.infer(node.value), self.infer(node.index)
        if key.type not in (T.NUMBER, T.STRING, T.UNKNOWN):
            self.ctx.misuse(f"an index is a number or a key, not {key.type}", node.index)
        if base.type in (T.LIST, T.OUTCOMES):
            return item_of(base)
        if base.type in _NOT_INDEXED:
            hint = "; use .text or .value" if base.type == T.OUTPUT else ""
            self.ctx.misuse(f"{base.type} cannot be indexed{hint}", node)
        return Value(T.STRING if base.type == T.STRING else T.UNKNOWN, base.sources)

    def unary(self, node: ast.Unary) -> Value:
        value = self.infer(node.operand)
        if node.op == "not":
            return Value(T.BOOL)
        self.expect(value, NOT_NUMBERS, "'-' needs a number", node)
        exact = value.exact and value.bound is not None
        return number(-value.bound if exact else None, value.exact)  # type: ignore[operator]

    def binary(self, node: ast.Binary) -> Value:
        left, right = self.infer(node.left), self.infer(node.right)
        sides = ((node.left, left), (node.right, right))
        if node.op in ("and", "or"):
            same = left.type if left.type == right.type else T.UNKNOWN
            return Value(same, left.sources | right.sources)
        if node.op in _ORDERING:
            for side, value in sides:
                self.expect(value, _NOT_ORDERED, f"'{node.op}' compares numbers or text", side)
        if node.op not in _ARITHMETIC:
            return Value(T.BOOL)
        what = f"'{node.op}' needs numbers or text"
        if not all(self.expect(value, _NOT_ARITHMETIC, what, side) for side, value in sides):
            return Value()
        if node.op == "+" and T.STRING in (left.type, right.type):
            if T.NUMBER in (left.type, right.type):
                self.ctx.misuse(
                    'cannot add text and a number; write a template instead: "{a} {b}"', node
                )
            return Value(T.STRING, left.sources | right.sources)
        if node.op == "+" and left.type == T.LIST:
            return Value(T.LIST, left.sources | right.sources, item=left.item)
        return _arithmetic_bound(node.op, left, right)

    # --- sessions

    def ask(self, node: ast.Ask) -> Value:
        agent = self.session_of(node, "ask")
        prompt = self.infer(node.prompt)
        if node.output is not None:
            self.model_ref(node.output, "ask ... as")
        if agent is None:
            return Value()
        answer = self.to_agent(agent, [(prompt, node.prompt, f"ask in the {agent} session")])
        if node.output is None:
            return answer
        return Value(T.MODEL, answer.sources, model=self.model_class(node.output))

    def send(self, node: ast.Send) -> Value:
        word = "send" if node.turn else "tell"
        agent = self.session_of(node, word)
        value = self.sequence(node.value, f"{word} each") if node.each else self.infer(node.value)
        self.raw_outcomes(value, node.value)
        if agent is None:
            return Value()
        shown = value.element() if node.each else value
        if node.turn:
            return self.to_agent(agent, [(shown, node.value, f"send in the {agent} session")])
        # A told message needs the edge as a send does, but makes no model call: no spend.
        self.ctx.used_agents.add(agent)
        self.handoff(shown, agent, node.value, f"tell in the {agent} session")
        return Value(T.NONE)

    def session_of(self, node: ast.Node, word: str) -> str | None:
        if not self.scope.sessions:
            self.ctx.misuse(
                f"'{word}' talks to a session, so it goes inside `session agent {{ ... }}`", node
            )
            return None
        return self.scope.sessions[-1]

    # --- rules shared by calls

    def handoff(self, value: Value, target: str, node: ast.Node, via: str) -> None:
        """The handoff rule, statically: every source of `value` needs an edge to `target`."""
        for source in sorted(value.sources):
            if source != target and (source, target) not in self.ctx.edges:
                edges = listing([f"{a} -> {b}" for a, b in sorted(self.ctx.edges)])
                self.ctx.error(
                    "handoff",
                    f"{source}'s output reaches {target} here ({via}), but no edge "
                    f"{source} -> {target} is declared; add `edges {source} -> {target}` "
                    f"(declared edges: {edges})",
                    node,
                )

    def model_ref(self, node: ast.Node, what: str) -> None:
        """`output: Model` and `as Model` name a pydantic model imported with `use`."""
        if not isinstance(node, ast.Name):
            self.ctx.misuse(f"{what} takes the name of a model imported with `use`", node)
        elif node.id not in self.ctx.imports:
            note = f" (import it with `use {node.id} from package.module`)"
            self.ctx.unknown("unknown-name", "model", node.id, self.ctx.imports, node, note=note)
        elif why := not_model(node.id, self.ctx.resolved.get(node.id, BaseModel)):
            self.ctx.misuse(why, node)  # the run refuses it too

    def model_class(self, node: ast.Node | None) -> type[BaseModel] | None:
        """The model class `node` names, when check imported it (None: not known here)."""
        value = self.ctx.resolved.get(node.id) if isinstance(node, ast.Name) else None
        return value if is_model(value) else None

    def raw_outcomes(self, value: Value, node: ast.Node) -> None:
        """Outcomes handed to an agent as they are would include the failed ones."""
        if value.type == T.OUTCOMES:
            self.ctx.warning(
                "outcomes",
                "these are outcomes (Ok, Failed, ...): pass them through compact(...) first "
                "so that only usable values are sent",
                node,
            )

    def card_variables(self, agent: str, keywords: list[ast.Keyword], node: ast.Node) -> None:
        """Every variable the agent's card uses must be passed (a missing one fails the run)."""
        missing = sorted(self.ctx.agents[agent].card_vars - {kw.name for kw in keywords})
        if missing:
            self.ctx.error(
                "card",
                f"{agent}'s card uses {', '.join(missing)}, which this call does not pass; "
                f"add {', '.join(f'{m}: ...' for m in missing)}",
                node,
            )

    def to_agent(self, agent: str, handed: Iterable[tuple[Value, ast.Node, str]]) -> Value:
        """One call of `agent` with values (each with its place and role): the handoff rule,
        the agent's use and spend, and its output."""
        self.ctx.used_agents.add(agent)
        for value, node, via in handed:
            self.handoff(value, agent, node, via)
        allowance = self.ctx.agents[agent].allowance
        self.spends[-1].absorb(Spend(allowance or 0.0, 1.0, allowance is None, {agent: 1.0}), 1)
        return Value(T.OUTPUT, frozenset({agent}))

    def keywords(self, node: ast.Call, agents: tuple[str, ...] = ()) -> dict[str, Value]:
        """Check the option names against the operator's; returns the values of those not in
        `agents` (options that name agents, checked by the caller)."""
        name, allowed = node.func.id, options(node.func.id)
        out: dict[str, Value] = {}
        for kw in node.keywords:
            if kw.name in out:
                self.ctx.misuse(f"'{kw.name}' is given twice", kw)
            elif kw.name not in allowed:
                self.ctx.misuse(
                    f"{name}() has no option '{kw.name}' (options: "
                    f"{', '.join(allowed)}){did_you_mean(kw.name, allowed)}",
                    kw,
                )
            keep = kw.name == "keep"
            out[kw.name] = Value() if kw.name in agents else self.infer(kw.value, callable_ok=keep)
        return out

    def no_lambdas(self, node: ast.Call, why: str = "") -> None:
        for lam in node.lambdas:
            self.ctx.misuse(why or f"{node.func.id}(...) takes no |x| {{ ... }} body", lam)

    def sequence(self, node: ast.Node, operator: str) -> Value:
        """A value an operator iterates over; anything but a sequence is misuse."""
        value = self.infer(node)
        if value.type in NOT_SEQUENCES:
            self.ctx.misuse(
                f"{operator}(...) needs a list (or the outcomes of parallel or pipeline), "
                f"but this is {value.type}",
                node,
            )
        return value

    # --- calls

    def call(self, node: ast.Call) -> Value:
        name = node.func.id
        if self.scope.lookup(name) is not None or name in self.ctx.params:
            self.ctx.misuse(f"'{name}' is a value, not something to call", node.func)
            return Value()
        if name in self.ctx.agents:
            return self.agent_call(node, name)
        if name in self.ctx.imports:
            return Value(T.UNKNOWN, self.infer_all(node))
        if name in _CALLS:
            return _CALLS[name](self, node)
        if name in CALLABLE_BUILTINS:
            return self.builtin_call(node)
        found = {*self.ctx.agents, *self.ctx.imports, *CALLABLE_BUILTINS, *OPERATORS}
        close = suggest(name, found)
        if close in OPERATORS or close in self.ctx.agents:
            what = "operator" if close in OPERATORS else "agent"
            message = f"unknown {what} '{name}'; did you mean '{close}'?"
            self.ctx.error(f"unknown-{what}", message, node.func)
        else:
            hint = f"; did you mean '{close}'?" if close else ""
            self.ctx.error(
                "unknown-name",
                f"unknown function '{name}'{hint} (call an agent, an operator, a built-in, "
                "or a Python callable imported with `use`)",
                node.func,
            )
        self.infer_all(node)
        return Value()

    def agent_call(self, node: ast.Call, agent: str) -> Value:
        self.no_lambdas(
            node,
            f"an agent call takes no |x| {{ ... }} body; to run {agent} per item use "
            "pipeline(items) |x| { ... }",
        )
        if len(node.args) > 1:
            self.ctx.misuse(
                f"{agent}(...) takes one prompt; pass other values as card variables: "
                f"{agent}(prompt, name: value)",
                node.args[1],
            )
        handed = [(self.infer(arg), arg, "prompt") for arg in node.args]
        for value, arg, _ in handed:
            self.raw_outcomes(value, arg)
        model = None
        for kw in node.keywords:
            if kw.name == "output":
                self.model_ref(kw.value, "output:")
                model = self.model_class(kw.value)
                continue
            value = self.infer(kw.value)
            if kw.name != "workspace":  # lending a workspace is not handing a value over
                handed.append((value, kw.value, f"card variable '{kw.name}'"))
        self.card_variables(agent, node.keywords, node.func)
        return replace(self.to_agent(agent, handed), model=model)

    def builtin_call(self, node: ast.Call) -> Value:
        """A built-in function, checked against its entry in the callables table."""
        name, entry = node.func.id, table()[node.func.id]
        assert entry.params is not None and entry.value is not None
        params, fn = entry.params, entry.value
        self.no_lambdas(node)
        for kw in node.keywords:
            self.ctx.misuse(f"{name}(...) takes no options", kw)
        refused, why = _PARAM_KINDS[params.kind]
        values = [self.infer(arg) for arg in node.args]
        for arg, value in zip(node.args, values, strict=True):
            self.expect(value, refused, f"{name}(...) {why}", arg)
        if not params.least <= len(values) <= (params.most or len(values)):
            self.ctx.misuse(params.wrong_count(name), node.func)
            return Value(T.STRING if fn is str else T.NUMBER)
        if fn is str:
            return Value(T.STRING, values[0].sources)
        if fn is len:
            return number()
        low, high = values[1:] if fn is clamp else (Value(), Value())
        if low.exact and high.exact and (low.bound or 0) > (high.bound or 0):
            self.ctx.misuse("clamp's low is above its high", node.args[1])
        return _builtin_bound(fn, values)

    def human_call(self, node: ast.Call) -> Value:
        self.no_lambdas(node)
        if not node.args:
            self.ctx.misuse('human(...) needs a question: human("Approve?", payload)', node.func)
        if len(node.args) > 2:
            self.ctx.misuse(
                "human(question, payload) takes two values; put more in a list", node.args[2]
            )
        for i, arg in enumerate(node.args):
            value = self.infer(arg)
            if i == 0 and value.type in _NOT_TEXT:
                self.ctx.misuse(f"the question must be text, not {value.type}", arg)
            self.handoff(value, HUMAN, arg, "question" if i == 0 else "payload")
        given = self.keywords(node)
        written = {kw.name: kw.value for kw in node.keywords}
        policy = written.get("on_timeout")
        if policy is not None and _text(policy) not in ("default", "fail"):
            self.ctx.misuse('on_timeout is "default" or "fail"', policy)
        if policy is not None and _text(policy) == "default" and "default" not in given:
            self.ctx.misuse('on_timeout: "default" needs default: value', policy)
        if "output" in written:
            self.model_ref(written["output"], "output:")
        # the answer is the person's product: handing it on needs `edges human -> agent`
        sources = given.get("default", Value()).sources | {HUMAN}
        if "output" not in written:
            return Value(T.UNKNOWN, sources)
        # a timed-out question gives the default as it is, not validated as the model
        model = None if "default" in written else self.model_class(written["output"])
        return Value(T.MODEL, sources, model=model)

    def team_call(self, node: ast.Call) -> Value:
        """`team(task, lead: agent, roles: [agents])`: the lead and every role are declared."""
        self.no_lambdas(node)
        given = {kw.name: kw.value for kw in node.keywords}
        lead = None
        if "lead" not in given:
            self.ctx.misuse("team(...) needs its lead: team(task, lead: agent)", node.func)
        else:
            lead = self.team_member(given["lead"], "a team's lead is a declared agent")
        roles = self.team_roles(given.get("roles"), lead)
        self.ctx.used_agents.update({*roles, *([lead] if lead else [])})
        if len(node.args) != 1:
            self.ctx.misuse("team(task, lead: agent) takes one task", node.func)
        handed = [(self.infer(arg), arg, "team task") for arg in node.args]
        for value, arg, _ in handed:
            self.raw_outcomes(value, arg)
        self.keywords(node, agents=("lead", "roles"))
        listen = given.get("listen")
        if isinstance(listen, ast.Str) and "".join(listen.texts) not in ("passive", "blocking"):
            self.ctx.misuse('listen is "passive" or "blocking"', listen)
        if lead is None:
            return Value()
        self.to_agent(lead, handed)
        self.spends[-1].unbounded_tokens = True  # the model decides how many turns a team takes
        return Value(T.UNKNOWN, frozenset({lead}))

    def team_member(self, node: ast.Node, why: str) -> str | None:
        """The declared agent `node` names bare, or None after saying why not."""
        if not isinstance(node, ast.Name):
            self.ctx.misuse(f"{why}, named bare: lead: coder, roles: [coder]", node)
        elif node.id not in self.ctx.agents:
            self.ctx.unknown(
                "unknown-agent", "agent", node.id, self.ctx.agents, node, note=f" ({why})"
            )
        else:
            return node.id
        return None

    def team_roles(self, node: ast.Node | None, lead: str | None) -> set[str]:
        """The team's roles: those listed, else every declared agent."""
        if node is None:
            return set(self.ctx.agents)
        if not isinstance(node, ast.ListExpr):
            self.ctx.misuse("roles takes a list of agents: roles: [coder, reviewer]", node)
            return set()
        members = [self.team_member(i, "a team's roles are declared agents") for i in node.items]
        if lead is not None and lead not in members and None not in members:
            self.ctx.misuse(f"the lead '{lead}' must be one of the roles", node)
        return {m for m in members if m is not None}

    def compact_call(self, node: ast.Call) -> Value:
        self.no_lambdas(
            node,
            "compact takes keep: a predicate or model imported with `use`, not a |x| { ... } body",
        )
        if len(node.args) != 1:
            self.ctx.misuse("compact(outcomes) takes one list", node.func)
            return Value(T.LIST)
        source = self.sequence(node.args[0], "compact")
        self.keywords(node)
        keep = next((k.value for k in node.keywords if k.name == "keep"), None)
        if keep is not None and not (isinstance(keep, ast.Name) and keep.id in self.ctx.imports):
            self.ctx.misuse("keep: takes a predicate or pydantic model imported with `use`", keep)
        item, model = source.element(), self.model_class(keep)
        if model is not None:  # what is kept is each value validated as the model
            item = Value(T.MODEL, item.sources, model=model)
        return Value(T.LIST, source.sources, item=item)

    def pipeline_call(self, node: ast.Call) -> Value:
        if not node.args:
            self.ctx.misuse("pipeline needs a source: pipeline(items) |x| { ... }", node.func)
            return Value(T.OUTCOMES)
        first = node.args[0]
        if ast.is_call(first, "parallel") and any(k.name == "first" for k in first.keywords):
            self.ctx.misuse(
                "first: cannot be used when parallel feeds a pipeline "
                "(its branches stream into the first stage)",
                first,
            )
        item = self.sequence(first, "pipeline").element()
        stages = [*node.args[1:], *node.lambdas]
        if not stages:
            self.ctx.misuse(
                "pipeline needs at least one stage: pipeline(items) |x| { ... } or "
                "pipeline(items, reviewer)",
                node.func,
            )
        for stage in stages:
            item = self.stage(stage, item)
        self.keywords(node)
        return Value(T.OUTCOMES, item.sources, item=item)

    def stage(self, stage: ast.Node, item: Value) -> Value:
        if isinstance(stage, ast.Lambda):
            if len(stage.params) != 1:
                self.ctx.misuse("a pipeline stage takes one item: |x| { ... }", stage)
            return self.lambda_value(stage, [item] * len(stage.params))
        if isinstance(stage, ast.Name) and stage.id in self.ctx.agents:
            return self.to_agent(stage.id, [(item, stage, "pipeline stage")])
        if isinstance(stage, ast.Name) and stage.id in self.ctx.imports:
            return Value(T.UNKNOWN, item.sources)
        self.ctx.misuse(
            "a pipeline stage is an agent, a Python callable imported with `use`, or |x| { ... }",
            stage,
        )
        self.infer(stage)
        return Value()

    def parallel_call(self, node: ast.Call) -> Value:
        if len(node.args) == 1:
            n = self.count(node.args[0], "parallel(n)", "branches") or number()
        else:
            self.ctx.misuse("parallel(n) takes the number of branches: parallel(3) { ... }", node)
            for arg in node.args:
                self.infer(arg)
            n = number()
        self.keywords(node)
        self.fan_out_width(node, n)
        body = node.lambdas[0]
        if len(body.params) > 1:
            self.ctx.misuse(
                "a parallel body takes at most one name, the branch index: |i| { ... }", body
            )
        self.spends.append(Spend())
        index = number(None if n.bound is None else max(n.bound - 1, 0))
        value = self.lambda_value(body, [index] * len(body.params))
        self.fan_out(node, n, self.spends.pop(), f"parallel({n.bound or 0:g})")
        return Value(T.OUTCOMES, value.sources, item=value)

    def fan_out_width(self, node: ast.Call, n: Value) -> None:
        """More branches than one `parallel` runs: an error when `n` is exact, else a warning."""
        if n.bound is None or not math.isfinite(n.bound):
            return
        limited = any(kw.name == "limit" for kw in node.keywords)
        label = f"parallel({show_quantity(n.bound)})" if n.exact else "parallel(n)"
        try:
            check_count(int(n.bound), 1 if limited else None, label, option="limit:")
        except ConfigError as exc:
            if n.exact:
                self.ctx.misuse(exc.message, node)
            else:
                bound = show_quantity(n.bound)
                self.ctx.warning("misuse", f"{exc.message} (n is at most {bound} here)", node)

    def count(self, node: ast.Node, what: str, of: str) -> Value | None:
        """The number of branches (or rounds) `node` gives: a whole number, 0 or more (None:
        not a number)."""
        n = self.infer(node)
        if not self.expect(n, NOT_NUMBERS, f"{what} takes a number of {of}", node):
            return None
        if n.exact and n.bound is not None and (n.bound < 0 or not float(n.bound).is_integer()):
            self.ctx.misuse(f"{what} needs a whole number of {of}, 0 or more", node)
        return n

    def budget_call(self, node: ast.Call) -> Value:
        for extra in [*node.args, *node.keywords]:
            self.ctx.misuse("budget() takes nothing between its parentheses", extra)
        return Value(T.SNAPSHOT)

    def fan_out(self, node: ast.Node, n: Value, inner: Spend, label: str) -> None:
        """n branches (or rounds) of a body must fit the flow's budget, at the allowances;
        then they count, n times over, towards the enclosing spend."""
        self.spends[-1].absorb(inner, n.bound)
        if n.bound is None or n.bound <= 0:
            return
        for what, need in (("tokens", inner.tokens * n.bound), ("calls", inner.calls * n.bound)):
            have = self.ctx.budget.get(what)
            if have is None or need <= have or (what == "tokens" and inner.unbounded_tokens):
                continue
            per = "round" if label.startswith(("repeat", "for")) else "branch"
            who = ", ".join(f"{a} x{c:g}" for a, c in sorted(inner.agents.items()))
            each = ", ".join(
                f"{a} {show_quantity(self.ctx.agents[a].allowance or 0)}"
                for a in sorted(inner.agents)
            )
            detail = f"at allowances of {each}" if what == "tokens" else ""
            message = (
                f"{label} may need {show_quantity(need)} {what} ({who} per {per}, "
                f"{detail or 'at one model call per agent call'}) but the flow's budget is "
                f"{show_quantity(have)} {what}; lower the "
                f"{'rounds' if per == 'round' else 'fan-out'} or the allowance, or raise the budget"
            )
            if n.exact:
                self.ctx.error("budget", message, node)
            else:
                self.ctx.warning("budget", f"{message} (n is at most {n.bound:g} here)", node)


_ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
}


def _arithmetic_bound(op: str, left: Value, right: Value) -> Value:
    """An upper bound of `left op right`, from the operands' (exact when both are)."""
    a, b, exact = left.bound, right.bound, left.exact and right.exact
    if a is None or b is None or not (right.exact or op == "+"):
        return number()
    if op == "*" and not (b >= 0 and (exact or a >= 0)) or op in ("/", "//", "%") and b <= 0:
        return number()
    if op == "%" and not exact:
        return number(b)  # a remainder stays below its divisor
    return number(_ARITHMETIC[op](a, b), exact)


def _builtin_bound(fn: Callable[..., Any], values: list[Value]) -> Value:
    """An upper bound of a built-in's result: its exact value when every value is exact, else
    the least bound a min has, a clamp's high, or the largest bound of the values."""
    bounds = [v.bound for v in values]
    known = [b for b in bounds if b is not None]
    exact = len(known) == len(bounds) and all(v.exact for v in values)
    if exact and all(math.isfinite(b) for b in known):  # int(inf) would raise, not run
        return number(fn(known) if fn in (min, max) else fn(*known), True)
    if fn is min and known:
        return number(min(known))
    if fn is clamp:
        return number(bounds[2])
    return number(max(known) if len(known) == len(bounds) else None)


def _text(node: object) -> str | None:
    """The text of a plain string (no `{holes}`), else None."""
    return "".join(node.texts) if isinstance(node, ast.Str) and not node.values else None


_DISPATCH: dict[type, Callable[[ExprChecker, Any], Value]] = {
    ast.Number: lambda _, node: number(node.value, True),
    ast.Str: lambda self, node: Value(T.STRING, sources_of([self.infer(v) for v in node.values])),
    ast.Const: lambda _, node: Value(T.NONE if node.value is None else T.BOOL),
    ast.ListExpr: ExprChecker.list_,
    ast.Attribute: ExprChecker.attribute,
    ast.Index: ExprChecker.index,
    ast.Unary: ExprChecker.unary,
    ast.Binary: ExprChecker.binary,
    ast.Call: ExprChecker.call,
    ast.Ask: ExprChecker.ask,
    ast.Send: ExprChecker.send,
}
_CALLS: dict[str, Callable[[ExprChecker, ast.Call], Value]] = {
    "compact": ExprChecker.compact_call,
    "pipeline": ExprChecker.pipeline_call,
    "human": ExprChecker.human_call,
    "team": ExprChecker.team_call,
    "parallel": ExprChecker.parallel_call,
    "budget": ExprChecker.budget_call,
}
