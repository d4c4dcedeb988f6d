"""Text to syntax tree: the grammar, positions, templates, units and syntax errors."""

from __future__ import annotations

import pytest

from swarmflow.dsl import DslError, parse
from swarmflow.dsl.syntax import ast
from swarmflow.dsl.syntax.parser import parse_module

from .helpers import EXAMPLES, flow_text


def steps_of(source: str) -> list[ast.Stmt]:
    return parse(source).steps[0].stmts


def expr_of(text: str) -> ast.Expr:
    stmt = steps_of(flow_text(f"x = {text}"))[0]
    assert isinstance(stmt, ast.Assign)
    return stmt.value


def syntax_error(source: str) -> tuple[int, int, str]:
    module, problems = parse_module(source, "bad.swarm")
    assert problems, "expected a syntax error"
    d = problems[0]
    assert d.severity == "error"
    return d.line, d.column, d.message


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.swarm")), ids=lambda p: p.name)
def test_every_example_parses(path):
    module = parse(path.read_text(), str(path))
    assert module.flows and module.steps


def test_declarations_are_read_with_their_parts():
    module = parse(
        "flow fix(task: str, n: int = 3) -> Verdict\n"
        "use Verdict, first_line as first from swarm_examples\n"
        "budget tokens 2M, calls 400, cost $5, time 30m\n"
        'agent coder { card "c.md.j2"  tools [read_file, edit]  workspace worktree  '
        "allowance 400k  steps 30 }\n"
        "edges coder -> human, coder -> coder\n"
        "steps { return task }\n"
    )
    flow = module.flows[0]
    assert [p.name.id for p in flow.params] == ["task", "n"]
    assert flow.returns is not None and flow.returns.name == "Verdict"
    assert [(n.name.id, n.local.id) for n in module.uses[0].names] == [
        ("Verdict", "Verdict"),
        ("first_line", "first"),
    ]
    assert module.uses[0].module == "swarm_examples"
    assert {b.key.id: b.value.value for b in module.budget} == {
        "tokens": 2_000_000,
        "calls": 400,
        "cost": 5.0,
        "time": 1800.0,
    }
    fields = {f.key.id: f.value for f in module.agents[0].fields}
    assert isinstance(fields["tools"], ast.NameList)
    assert [t.id for t in fields["tools"].items] == ["read_file", "edit"]
    assert fields["allowance"].value == 400_000  # type: ignore[union-attr]
    assert [[n.id for n in c.names] for c in module.edges] == [
        ["coder", "human"],
        ["coder", "coder"],
    ]


def test_edges_over_several_lines_keep_the_place_of_every_name():
    module = parse(
        "flow f(task: str) -> str\nagent a {}\nagent b {}\n"
        "edges a -> b,\n   b -> a -> human, # both ways\n  a -> human\nsteps { return task }\n"
    )
    placed = [[(n.id, n.line, n.column) for n in c.names] for c in module.edges]
    assert placed == [
        [("a", 4, 7), ("b", 4, 12)],
        [("b", 5, 4), ("a", 5, 9), ("human", 5, 14)],
        [("a", 6, 3), ("human", 6, 8)],
    ]


@pytest.mark.parametrize(
    ("edges", "where", "message"),
    [
        ("edges a -> b, b ->", (4, 19), "this line ends too early; expected a name"),
        ("edges a -> b b -> a", (4, 14), "unexpected edges 'b -> a'; expected ','"),
        ("edges a", (4, 8), "this line ends too early; expected '->'"),
        ("edges a -> b,, b -> a", (4, 14), "unexpected ','"),
    ],
)
def test_a_malformed_edge_is_a_located_syntax_error(edges, where, message):
    line, column, found = syntax_error(
        f"flow f(task: str) -> str\nagent a {{}}\nagent b {{}}\n{edges}\nsteps {{ return task }}\n"
    )
    assert (line, column) == where and found.startswith(message)


def test_units_fold_into_numbers():
    assert expr_of("1.5k").value == 1500  # type: ignore[union-attr]
    assert expr_of("90s").dimension == "duration"  # type: ignore[union-attr]
    assert expr_of("2h").value == 7200  # type: ignore[union-attr]
    assert expr_of("$0.50").value == 0.5  # type: ignore[union-attr]
    assert expr_of("400_000").value == 400_000  # type: ignore[union-attr]


def test_precedence_follows_python():
    e = expr_of("a + b * c < d and not e or f")
    assert isinstance(e, ast.Binary) and e.op == "or"
    left = e.left
    assert isinstance(left, ast.Binary) and left.op == "and"
    cmp = left.left
    assert isinstance(cmp, ast.Binary) and cmp.op == "<"
    assert isinstance(cmp.left, ast.Binary) and cmp.left.op == "+"
    assert isinstance(cmp.left.right, ast.Binary) and cmp.left.right.op == "*"
    assert isinstance(left.right, ast.Unary) and left.right.op == "not"


def test_not_binds_looser_than_comparison_unless_grouped():
    bare = expr_of("not a == b")
    assert isinstance(bare, ast.Unary) and isinstance(bare.operand, ast.Binary)
    grouped = expr_of("(not a) == b")
    assert isinstance(grouped, ast.Binary) and isinstance(grouped.left, ast.Unary)


def test_attribute_index_and_calls_chain():
    e = expr_of("f(x, key: y).value[0].name")
    assert isinstance(e, ast.Attribute) and e.attr == "name"
    assert isinstance(e.value, ast.Index)
    call = e.value.value
    assert isinstance(call, ast.Attribute) and isinstance(call.value, ast.Call)
    assert [k.name for k in call.value.keywords] == ["key"]


def test_operators_and_lambdas():
    e = expr_of("compact(parallel(n, limit: 2) |i| { coder(task, attempt: i) })")
    assert isinstance(e, ast.Call) and ast.is_call(e.args[0], "parallel")
    par = e.args[0]
    assert [p.id for p in par.lambdas[0].params] == ["i"]
    p = expr_of("pipeline(xs, first_line) |c| { reviewer(c) } |r| { r.text }")
    assert isinstance(p, ast.Call) and len(p.lambdas) == 2 and len(p.args) == 2
    assert ast.is_call(expr_of("budget()"), "budget")


def test_templates_parse_their_holes_in_place():
    e = expr_of('"Fix {task} (try {i + 1}) {{literal}}"')
    assert isinstance(e, ast.Str)
    assert e.texts == ["Fix ", " (try ", ") {literal}"]
    assert isinstance(e.values[1], ast.Binary)
    # the hole's name points at its own column in the file
    name = e.values[0]
    assert isinstance(name, ast.Name) and (name.line, name.column) == (7, 11)


def test_long_strings_and_escapes():
    e = expr_of('"""line one\nline "two"\n"""')
    assert isinstance(e, ast.Str) and e.texts == ['line one\nline "two"\n']
    assert expr_of(r'"tab\there\n"').texts == ["tab\there\n"]  # type: ignore[union-attr]


def test_sessions_ask_and_send():
    stmts = steps_of(
        flow_text(
            'session arbiter(task: task) {\n send each reviews\n v = ask "pick" as Verdict\n}'
        )
    )
    session = stmts[0]
    assert isinstance(session, ast.Session) and session.agent.id == "arbiter"
    send, ask = session.body.stmts
    assert isinstance(send, ast.ExprStmt) and isinstance(send.value, ast.Send)
    assert send.value.each
    assert isinstance(ask, ast.Assign) and isinstance(ask.value, ast.Ask)
    assert ask.value.output is not None and ask.value.output.id == "Verdict"


def test_newlines_inside_brackets_and_else_on_its_own_line():
    stmts = steps_of(
        flow_text(
            "x = f(a,\n      b)\nif x {\n  y = 1\n}\nelse if z {\n  y = 2\n}\nelse {\n  y = 3\n}"
        )
    )
    assert isinstance(stmts[0], ast.Assign)
    branch = stmts[1]
    assert isinstance(branch, ast.If) and branch.orelse is not None
    assert isinstance(branch.orelse.stmts[0], ast.If)


def test_semicolons_and_comments():
    stmts = steps_of(flow_text("a = 1; b = 2  # two steps\n# a comment line\nreturn a"))
    assert [type(s).__name__ for s in stmts] == ["Assign", "Assign", "Return"]


def test_positions_of_nodes():
    stmt = steps_of(flow_text("  verdict = coder(task)"))[0]
    assert isinstance(stmt, ast.Assign)
    assert (stmt.line, stmt.column) == (7, 3)
    assert (stmt.value.line, stmt.value.column, stmt.value.end_column) == (7, 13, 24)


@pytest.mark.parametrize(
    ("source", "where", "words"),
    [
        ("flow f() -> str\nsteps {\n  x = (1 + \n}\n", (3, 7), "never closed"),
        (
            "flow f() -> str\nsteps {\n  x = paralel(3) { a() }\n}\n",
            (3, 18),
            "did you mean 'parallel'",
        ),
        ("flow f() -> str\nsteps {\n  x = f(a = 1)\n}\n", (3, 11), "name: value"),
        ('flow f() -> str\nsteps {\n  x = "open\n}\n', (3, 7), "not closed"),
        ("flow f() -> str\nsteps {\n  while x { }\n}\n", (3, 3), "repeat n { ... } until"),
        ('flow f()\nagent c {\n card "x"\nagent d {}\n', (2, 1), "agent 'c' is never closed"),
        ('flow f()\nagent c {\n card "x"\n\nsteps {\n}\n', (2, 1), "agent 'c' is never closed"),
        ("flow f()\nsteps {\n  x = g([1, 2\n  return x\n}\n", (3, 9), "'[' is never closed"),
        ("flow f()\nsteps {\n  x = g(1\n  y = 2\n}\n", (3, 8), "add ')' before line 4"),
        ("flow f() -> str\nsteps {\n  for x in y:\n}\n", (3, 13), "braces"),
        ("flow f() -> str\nsteps {\n  each = 1\n}\n", (3, 3), "reserved word"),
        ("flow f() -> str\nsteps {\n  x = 3 @ 4\n}\n", (3, 9), "unexpected character"),
        ("flow f() -> str\nsteps {\n  x = 3q\n}\n", (3, 7), "unknown unit"),
        ("flow f() -> str\nsteps {\n  x = a < b < c\n}\n", (3, 13), "chained"),
        ("flow f() -> str\nsteps {\n  x = p(a) |c| c\n}\n", (3, 16), "braces"),
        ("flow f() -> str\nsteps {\n  if x: y\n}\n", (3, 7), "braces"),
        ("flow f() -> str\nsteps {\n  x = 1 }\n}\n", (4, 1), "unmatched '}'"),
        ('flow f() -> str\nsteps {\n  x = "{a +}"\n}\n', (3, 12), "template"),
        ('flow f() -> str\nsteps {\n  x = "a } b"\n}\n', (3, 10), "lone '}'"),
        ('flow f() -> str\nsteps {\n  x = "a {b c}"\n}\n', (3, 13), "unexpected name 'c'"),
        ('flow f() -> str\nsteps {\n  x = """a\n {f(b c)}"""\n}\n', (4, 7), "unexpected name"),
        ("flow f() -> str\nsteps {\n  x = 'a'\n}\n", (3, 7), "double quotes"),
        ("agent a { tools [x, y }\n", (1, 17), "'[' is never closed"),
        ("agent a { tools [x y] }\n", (1, 20), "expected ',' or ']'"),
    ],
)
def test_syntax_errors_are_located_and_explained(source, where, words):
    line, column, message = syntax_error(source)
    assert (line, column) == where, message
    assert words in message


def test_parse_raises_dsl_error_with_rendering():
    with pytest.raises(DslError) as caught:
        parse("flow f() -> str\nsteps {\n  x = (\n}\n", "bad.swarm")
    text = str(caught.value)
    assert text.startswith("bad.swarm:3:7: error:")
    assert "\n      x = (\n          ^" in text


def test_too_deep_nesting_is_a_diagnostic_not_a_crash():
    deep = "x = " + "(" * 200 + "1" + ")" * 200
    _, _, message = syntax_error(flow_text(deep))
    assert "nests too deeply" in message
    chain = "x = a" + ".b" * 400
    assert "nests too deeply" in syntax_error(flow_text(chain))[2]
    elifs = "if a { x = 1 }" + " else if a { x = 1 }" * 300
    assert "nests too deeply" in syntax_error(flow_text(elifs))[2]


def test_the_grammar_is_lalr_without_conflicts(caplog):
    import logging

    from lark import Lark, logger

    from swarmflow.dsl.syntax.grammar import _GRAMMAR, Newlines

    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="lark"):
            Lark(
                _GRAMMAR.read_text(),
                parser="lalr",
                lexer="contextual",
                postlex=Newlines(),
                start=["start", "expr"],
                maybe_placeholders=True,
                debug=True,
            )
    finally:
        logger.setLevel(old)
    assert not [r for r in caplog.records if "conflict" in r.getMessage().lower()]


def test_import_swarmflow_does_not_import_lark():
    import subprocess
    import sys

    code = "import sys, swarmflow; print('lark' in sys.modules, 'swarmflow.dsl' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
