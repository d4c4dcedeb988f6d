"""The `.swarm` syntax tree: frozen pydantic models, each with its place in the source.

`line`/`column` are 1-based and name the node's first character; `end_line`/`end_column`
(exclusive) its last. The parser builds these; the checker and the compiler only read them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class Node(BaseModel):
    """Where a node sits in the source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    line: int
    column: int
    end_line: int
    end_column: int


Dimension = Literal["count", "duration", "cost"]


# -- expressions ---------------------------------------------------------------------------


class Name(Node):
    """A reference to a variable, input, import, agent or built-in."""

    kind: Literal["name"] = "name"
    id: str


class Number(Node):
    """A number with its unit folded in: `400k` is 400000, `30m` is 1800 seconds, `$5` is 5."""

    kind: Literal["number"] = "number"
    value: float
    text: str
    dimension: Dimension = "count"
    unit: str = ""

    @property
    def is_integer(self) -> bool:
        return self.dimension == "count" and float(self.value).is_integer()


class Str(Node):
    """A string; with `{expr}` holes it is a template. `texts` has one more item than `values`."""

    kind: Literal["str"] = "str"
    texts: list[str]
    values: list[Expr] = []


class Const(Node):
    """`true`, `false` or `none`."""

    kind: Literal["const"] = "const"
    value: bool | None


class ListExpr(Node):
    """`[a, b, c]`."""

    kind: Literal["list"] = "list"
    items: list[Expr]


class Attribute(Node):
    """`value.attr`."""

    kind: Literal["attribute"] = "attribute"
    value: Expr
    attr: str


class Index(Node):
    """`value[index]`."""

    kind: Literal["index"] = "index"
    value: Expr
    index: Expr


class Unary(Node):
    """`not x` or `-x`."""

    kind: Literal["unary"] = "unary"
    op: Literal["not", "-"]
    operand: Expr


class Binary(Node):
    """`left op right` for arithmetic, comparison and `and`/`or`."""

    kind: Literal["binary"] = "binary"
    op: str
    left: Expr
    right: Expr


class Keyword(Node):
    """`name: value` inside a call's parentheses."""

    name: str
    value: Expr


class Lambda(Node):
    """`|x| { ... }`: a block run once per item, or once per branch."""

    params: list[Name]
    body: Block


class Call(Node):
    """`f(args, key: value) |x| { ... }`: an agent, a built-in, an operator or an import."""

    kind: Literal["call"] = "call"
    func: Name
    args: list[Expr] = []
    keywords: list[Keyword] = []
    lambdas: list[Lambda] = []


class Parallel(Node):
    """`parallel(n, limit: k) |i| { ... }`: n branches of the body, run concurrently."""

    kind: Literal["parallel"] = "parallel"
    args: list[Expr] = []
    keywords: list[Keyword] = []
    body: Lambda


class BudgetCall(Node):
    """`budget()`: what remains of the budget, as seen from here."""

    kind: Literal["budget"] = "budget"
    args: list[Expr] = []
    keywords: list[Keyword] = []


class Ask(Node):
    """`ask prompt as Model`: a turn on the enclosing session, answered as `Model`."""

    kind: Literal["ask"] = "ask"
    prompt: Expr
    output: Name | None = None


class Send(Node):
    """`send value` or `send each values`: messages to the enclosing session."""

    kind: Literal["send"] = "send"
    value: Expr
    each: bool = False


Expr = Annotated[
    Name
    | Number
    | Str
    | Const
    | ListExpr
    | Attribute
    | Index
    | Unary
    | Binary
    | Call
    | Parallel
    | BudgetCall
    | Ask
    | Send,
    Field(discriminator="kind"),
]


# -- statements ----------------------------------------------------------------------------


class Assign(Node):
    """`name = expr`."""

    kind: Literal["assign"] = "assign"
    target: Name
    value: Expr


class ExprStmt(Node):
    """An expression run for its effect (or, as a block's last statement, its value)."""

    kind: Literal["expr"] = "expr"
    value: Expr


class Return(Node):
    """`return expr`: the flow's output (or the value of a `|x| { ... }` body)."""

    kind: Literal["return"] = "return"
    value: Expr | None = None


class If(Node):
    """`if cond { ... } else { ... }`; `else if` nests another `If` in `orelse`."""

    kind: Literal["if"] = "if"
    cond: Expr
    then: Block
    orelse: Block | None = None


class Session(Node):
    """`session agent(card: vars) { ... }`: `send` and `ask` inside talk to one conversation."""

    kind: Literal["session"] = "session"
    agent: Name
    args: list[Expr] = []
    keywords: list[Keyword] = []
    body: Block


class Loop(Node):
    """`repeat n { ... } until cond` (`var` is None) or `for var in items { ... } until cond`.

    Rounds run one after another; a name the body assigns carries into the next round. The
    loop stops after `over` rounds (or items), or as soon as `until` holds after a round.
    """

    kind: Literal["loop"] = "loop"
    var: Name | None = None
    over: Expr
    body: Block
    until: Expr | None = None


class Arm(Node):
    """`"value" => ...` in a `match`; `pattern` is None for `else => ...`."""

    pattern: str | None
    body: Block


class Match(Node):
    """`match subject { "a" => ..., else => ... }`: the first arm whose text equals the value."""

    kind: Literal["match"] = "match"
    subject: Expr
    arms: list[Arm]


Stmt = Annotated[
    Assign | ExprStmt | Return | If | Session | Loop | Match, Field(discriminator="kind")
]


class Block(Node):
    """`{ statements }`."""

    stmts: list[Stmt]


# -- declarations --------------------------------------------------------------------------


class TypeRef(Node):
    """A type in the signature: `str`, `int`, `list[str]`, or an imported model."""

    name: str
    args: list[TypeRef] = []

    def show(self) -> str:
        inner = ", ".join(a.show() for a in self.args)
        return f"{self.name}[{inner}]" if self.args else self.name


class Param(Node):
    """One input: `name: type` or `name: type = default`."""

    name: Name
    type: TypeRef
    default: Expr | None = None


class FlowDecl(Node):
    """`flow name(inputs) -> Output`."""

    name: Name
    params: list[Param] = []
    returns: TypeRef | None = None


class UseName(Node):
    """One imported name, maybe renamed: `apply_patch as apply`."""

    name: Name
    alias: Name | None = None

    @property
    def local(self) -> Name:
        return self.alias or self.name


class UseDecl(Node):
    """`use A, b as c from package.module`."""

    names: list[UseName]
    module: str


class BudgetItem(Node):
    """`tokens 2M` in a `budget` line."""

    key: Name
    value: Number


class NameList(Node):
    """`[read_file, edit]` in an agent field."""

    kind: Literal["names"] = "names"
    items: list[Name]


FieldValue = Annotated[Str | Number | Name | NameList | Const, Field(discriminator="kind")]


class AgentField(Node):
    """`tools [read_file, edit]`, `allowance 400k`, ... inside an agent block."""

    key: Name
    value: FieldValue


class AgentDecl(Node):
    """`agent name { fields }`."""

    name: Name
    fields: list[AgentField] = []


class EdgeChain(Node):
    """`a -> b -> c`: the edges a -> b and b -> c."""

    names: list[Name]

    def pairs(self) -> list[tuple[Name, Name]]:
        return list(zip(self.names, self.names[1:], strict=False))


class Module(Node):
    """A whole `.swarm` file. Lists keep duplicates, so that the checker can report them."""

    flows: list[FlowDecl] = []
    uses: list[UseDecl] = []
    budget: list[BudgetItem] = []
    agents: list[AgentDecl] = []
    edges: list[EdgeChain] = []
    steps: list[Block] = []


for _model in (
    Str,
    ListExpr,
    Attribute,
    Index,
    Unary,
    Binary,
    Keyword,
    Lambda,
    Call,
    Parallel,
    BudgetCall,
    Ask,
    Send,
    Assign,
    ExprStmt,
    Return,
    If,
    Session,
    Loop,
    Arm,
    Match,
    Block,
    Param,
    TypeRef,
):
    _model.model_rebuild()
