"""Every example in docs/dsl.md checks clean (or fails exactly as shown) and, where it can, runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from swarmflow import run
from swarmflow.dsl import check_source, load_source
from swarmflow.dsl.syntax.diagnostics import render_all
from swarmflow.flows.offline_model import offline_model

from .helpers import DOCS, EXAMPLES

_BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
GRAMMAR = Path(__file__).resolve().parents[2] / "swarmflow" / "dsl" / "syntax" / "grammar.lark"


def blocks() -> list[tuple[str, str, str]]:
    return [(m.group(1), m.group(2).strip(), m.group(3)) for m in _BLOCK.finditer(DOCS.read_text())]


def swarm_blocks(mode: str) -> list[str]:
    return [body for lang, info, body in blocks() if lang == "swarm" and info == mode]


def test_the_docs_have_examples_of_every_kind():
    assert len(swarm_blocks("")) >= 5
    assert swarm_blocks("check-only") and swarm_blocks("broken")


@pytest.mark.parametrize("source", swarm_blocks("") + swarm_blocks("check-only"))
def test_each_example_checks_clean(source):
    found = check_source(source, "doc.swarm", resolve=True)
    assert found == [], render_all(found, source)


@pytest.mark.parametrize("source", swarm_blocks(""))
async def test_each_runnable_example_runs_with_the_demo_model(source):
    flow = load_source(source, "doc.swarm")
    inputs = {
        name: "a report long enough to act on"
        for name, p in flow.signature.parameters.items()
        if p.default is p.empty
    }
    result = await run(
        flow, model=offline_model(), human=lambda q, payload: payload or "yes", **inputs
    )
    assert result.status == "ok", result.error


def test_the_broken_example_prints_what_the_docs_show():
    all_blocks = blocks()
    for i, (lang, info, body) in enumerate(all_blocks):
        if lang == "swarm" and info == "broken":
            expected = all_blocks[i + 1]
            assert expected[0] == "text"
            found = check_source(body, "broken.swarm")
            assert render_all(found, body) + "\n" == expected[2]


def test_the_first_examples_are_the_example_files():
    sources = swarm_blocks("")
    for name in ("parallel_coder_arbiter.swarm", "review_loop.swarm", "route_report.swarm"):
        assert (EXAMPLES / name).read_text() in sources


def test_the_grammar_in_the_docs_is_the_one_the_parser_uses():
    grammar = GRAMMAR.read_text()
    rules = grammar[grammar.index("// -- declarations") : grammar.index("// -- tokens")]
    documented = [body for lang, _, body in blocks() if lang == "lark"]
    assert documented == [rules.rstrip() + "\n"]


def test_the_command_line_examples_work(monkeypatch, capsys):
    import shlex

    from .test_cli import main

    monkeypatch.chdir(DOCS.parent.parent)
    commands = [
        line[2:].split("#")[0]
        for lang, _, body in blocks()
        if lang == "console"
        for line in body.splitlines()
        if line.startswith("$ swarmflow ")
    ]
    assert len(commands) == 3
    for command in commands:
        assert main(shlex.split(command)[1:]) == 0, command
    capsys.readouterr()


def test_the_python_example_works(monkeypatch):
    monkeypatch.chdir(DOCS.parent.parent)
    [code] = [body for lang, _, body in blocks() if lang == "python"]
    code = code.replace('model="gpt-4o-mini"', "model=offline_model()")
    scope = {"offline_model": offline_model}
    exec(compile(code, "dsl.md", "exec"), scope)
    assert scope["result"].status == "ok"
