"""The `.swarm` syntax tree: frozen dataclasses, each with its place in the source.

`line`/`column` are 1-based and name the node's first character; `end_line`/`end_column`
(exclusive) its last. The parser builds these; the checker and the compiler only read them.
`children(node)` walks any node generically, so no pass keeps its own list of fields.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Literal, TypeGuard

from swarmflow.dsl.syntax.literals import Dimension


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """Where a node sits in the source."""

    line: int
    column: int
    end_line: int
    end_column: int


def children(item: Node) -> Iterator[Node]:
    """The nodes directly inside `item`, in field order."""
    for name in _inner_fields(type(item)):
        value = getattr(item, name)
        if isinstance(value, Node):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, Node))


_INNER: dict[type, tuple[str, ...]] = {}


def _inner_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node class that may hold nodes (not its place in the source)."""
    if kind not in _INNER:  # a subclass's own fields come after Node's place fields
        _INNER[kind] = tuple(f.name for f in fields(kind)[len(fields(Node)) :])
    return _INNER[kind]


def walk(item: Node, prune: type | tuple[type, ...] = ()) -> Iterator[Node]:
    """`item` and every node inside it, in no set order; nodes of type `prune` are yielded
    but not entered."""
    stack = [item]
    while stack:
        current = stack.pop()
        yield current
        if not isinstance(current, prune):
            stack.extend(children(current))


# -- expressions ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Name(Node):
    """A reference to a variable, input, import, agent or built-in."""

    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Number(Node):
    """A number with its unit folded in: `400k` is 400000, `30m` is 1800 seconds, `$5` is 5."""

    value: float
    text: str
    dimension: Dimension = "count"
    unit: str = ""

    @property
    def is_integer(self) -> bool:
        return self.dimension == "count" and float(self.value).is_integer()


@dataclass(frozen=True, slots=True, kw_only=True)
class Str(Node):
    """A string; with `{expr}` holes it is a template. `texts` has one more item than `values`."""

    texts: list[str]
    values: list[Expr] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class Const(Node):
    """`true`, `false` or `none`."""

    value: bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ListExpr(Node):
    """`[a, b, c]`."""

    items: list[Expr]


@dataclass(frozen=True, slots=True, kw_only=True)
class Attribute(Node):
    """`value.attr`."""

    value: Expr
    attr: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Index(Node):
    """`value[index]`."""

    value: Expr
    index: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class Unary(Node):
    """`not x` or `-x`."""

    op: Literal["not", "-"]
    operand: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class Binary(Node):
    """`left op right` for arithmetic, comparison and `and`/`or`."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class Keyword(Node):
    """`name: value` inside a call's parentheses."""

    name: str
    value: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class Lambda(Node):
    """`|x| { ... }`: a block run once per item, or once per branch."""

    params: list[Name]
    body: Block


@dataclass(frozen=True, slots=True, kw_only=True)
class Call(Node):
    """`f(args, key: value) |x| { ... }`: an agent, a built-in, an operator or an import.

    `parallel(n) { ... }` and `budget()` are calls too (the body is a lambda with no names).
    """

    func: Name
    args: list[Expr] = field(default_factory=list)
    keywords: list[Keyword] = field(default_factory=list)
    lambdas: list[Lambda] = field(default_factory=list)


def is_call(node: object, name: str) -> TypeGuard[Call]:
    """Whether `node` is a call of `name` (`parallel(...)`, say)."""
    return isinstance(node, Call) and node.func.id == name


OPERATORS = frozenset({"budget", "compact", "human", "parallel", "pipeline", "session", "team"})
"""The operators a step can call by name: the language's own words, so that the syntax errors
can suggest them. The check stage's table (check/callables.py) says what each one takes; a
test keeps the two the same names."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask(Node):
    """`ask prompt as Model`: a turn on the enclosing session, answered as `Model`."""

    prompt: Expr
    output: Name | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Send(Node):
    """`send value` or `send each values`: messages to the enclosing session, each running a
    turn; `tell value` and `tell each values` add them without a turn (`turn` is False)."""

    value: Expr
    each: bool = False
    turn: bool = True


Expr = (
    Name | Number | Str | Const | ListExpr | Attribute | Index | Unary | Binary | Call | Ask | Send
)


# -- statements ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Assign(Node):
    """`name = expr`."""

    target: Name
    value: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class ExprStmt(Node):
    """An expression run for its effect (or, as a block's last statement, its value)."""

    value: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class Return(Node):
    """`return expr`: the flow's output (or the value of a `|x| { ... }` body)."""

    value: Expr | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class If(Node):
    """`if cond { ... } else { ... }`; `else if` nests another `If` in `orelse`."""

    cond: Expr
    then: Block
    orelse: Block | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Session(Node):
    """`session agent(card: vars) { ... }`: `send` and `ask` inside talk to one conversation."""

    agent: Name
    args: list[Expr] = field(default_factory=list)
    keywords: list[Keyword] = field(default_factory=list)
    body: Block


@dataclass(frozen=True, slots=True, kw_only=True)
class Loop(Node):
    """`repeat n { ... } until cond` (`var` is None) or `for var in items { ... } until cond`.

    Rounds run one after another; a name the body assigns carries into the next round. The
    loop stops after `over` rounds (or items), or as soon as `until` holds after a round.
    """

    var: Name | None = None
    over: Expr
    body: Block
    until: Expr | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Arm(Node):
    """`"value" => ...` in a `match`; `pattern` is None for `else => ...`."""

    pattern: str | None
    body: Block


@dataclass(frozen=True, slots=True, kw_only=True)
class Match(Node):
    """`match subject { "a" => ..., else => ... }`: the first arm whose text equals the value."""

    subject: Expr
    arms: list[Arm]


Stmt = Assign | ExprStmt | Return | If | Session | Loop | Match


@dataclass(frozen=True, slots=True, kw_only=True)
class Block(Node):
    """`{ statements }`."""

    stmts: list[Stmt]


# -- declarations --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TypeRef(Node):
    """A type in the signature: `str`, `int`, `list[str]`, or an imported model."""

    name: str
    args: list[TypeRef] = field(default_factory=list)

    def show(self) -> str:
        inner = ", ".join(a.show() for a in self.args)
        return f"{self.name}[{inner}]" if self.args else self.name


@dataclass(frozen=True, slots=True, kw_only=True)
class Param(Node):
    """One input: `name: type` or `name: type = default`."""

    name: Name
    type: TypeRef
    default: Expr | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FlowDecl(Node):
    """`flow name(inputs) -> Output`."""

    name: Name
    params: list[Param] = field(default_factory=list)
    returns: TypeRef | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UseName(Node):
    """One imported name, maybe renamed: `apply_patch as apply`."""

    name: Name
    alias: Name | None = None

    @property
    def local(self) -> Name:
        return self.alias or self.name


@dataclass(frozen=True, slots=True, kw_only=True)
class UseDecl(Node):
    """`use A, b as c from package.module`."""

    names: list[UseName]
    module: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetItem(Node):
    """`tokens 2M` in a `budget` line."""

    key: Name
    value: Number


@dataclass(frozen=True, slots=True, kw_only=True)
class NameList(Node):
    """`[read_file, edit]` in an agent field."""

    items: list[Name]


FieldValue = Str | Number | Name | NameList | Const


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentField(Node):
    """`tools [read_file, edit]`, `allowance 400k`, ... inside an agent block."""

    key: Name
    value: FieldValue


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentDecl(Node):
    """`agent name { fields }`."""

    name: Name
    fields: list[AgentField] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class EdgeChain(Node):
    """`a -> b -> c`: the edges a -> b and b -> c."""

    names: list[Name]

    def pairs(self) -> list[tuple[Name, Name]]:
        return list(zip(self.names, self.names[1:], strict=False))


@dataclass(frozen=True, slots=True, kw_only=True)
class Module(Node):
    """A whole `.swarm` file. Lists keep duplicates, so that the checker can report them."""

    flows: list[FlowDecl] = field(default_factory=list)
    uses: list[UseDecl] = field(default_factory=list)
    budget: list[BudgetItem] = field(default_factory=list)
    agents: list[AgentDecl] = field(default_factory=list)
    edges: list[EdgeChain] = field(default_factory=list)
    steps: list[Block] = field(default_factory=list)
