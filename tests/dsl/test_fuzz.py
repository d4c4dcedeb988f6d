"""Junk and mutated input never raises: every failure is a located diagnostic."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swarmflow.dsl import DslError, check_source, compile_source

from .helpers import DOCS, EXAMPLES

SEEDS = [p.read_text() for p in sorted(EXAMPLES.glob("*.swarm"))]
SEEDS += re.findall(r"^```swarm[^\n]*\n(.*?)^```", DOCS.read_text(), re.DOTALL | re.MULTILINE)
VOCABULARY = [
    "flow",
    "use",
    "from",
    "as",
    "budget",
    "agent",
    "edges",
    "steps",
    "return",
    "if",
    "else",
    "session",
    "ask",
    "send",
    "tell",
    "each",
    "parallel",
    "pipeline",
    "compact",
    "human",
    "and",
    "or",
    "not",
    "true",
    "none",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "|",
    ",",
    ":",
    ";",
    ".",
    "=",
    "==",
    "->",
    "+",
    "-",
    "*",
    "/",
    "<",
    '"',
    '"""',
    "#",
    "\n",
    " ",
    "400k",
    "$5",
    "30m",
    "3q",
    "x",
    "coder",
    "{x}",
    "\\",
    "\t",
    "é",
]
FAST = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_TOKEN = re.compile(r"\w+|\s+|.", re.DOTALL)


def assert_located(source: str) -> None:
    """Checking (and, when clean, compiling) gives only diagnostics that point into the text."""
    found = check_source(source, "fuzz.swarm")
    lines = source.count("\n") + 1
    for d in found:
        assert 1 <= d.line <= lines + 1, d
        assert d.column >= 1, d
        assert d.message and d.severity in ("error", "warning")
        assert d.render(source).startswith(f"fuzz.swarm:{d.line}:{d.column}: ")
    if not any(d.is_error for d in found):
        try:
            compile_source(source, "fuzz.swarm")
        except DslError as exc:  # only the located kind of failure is allowed
            assert exc.diagnostics


@st.composite
def mutated(draw: st.DrawFn) -> str:
    source = draw(st.sampled_from(SEEDS))
    tokens = _TOKEN.findall(source)
    for _ in range(draw(st.integers(1, 4))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "insert", "char"]))
        if op == "delete":
            del tokens[i]
        elif op == "duplicate":
            tokens.insert(i, tokens[i])
        elif op == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "insert":
            tokens.insert(i, draw(st.sampled_from(VOCABULARY)))
        else:
            tokens[i] = _mutate_chars(draw, tokens[i])
    return "".join(tokens)


def _mutate_chars(draw: st.DrawFn, token: str) -> str:
    if not token:
        return token
    k = draw(st.integers(0, len(token) - 1))
    op = draw(st.sampled_from(["delete", "duplicate", "swap"]))
    if op == "delete":
        return token[:k] + token[k + 1 :]
    if op == "duplicate":
        return token[:k] + token[k] + token[k:]
    return (
        token[:k] + token[k + 1 : k + 2] + token[k] + token[k + 2 :]
        if k + 1 < len(token)
        else token
    )


@FAST
@given(st.text(max_size=300))
def test_random_text_gives_only_located_diagnostics(source):
    assert_located(source)


@FAST
@given(st.lists(st.sampled_from(VOCABULARY), max_size=60).map(" ".join))
def test_random_token_soup_gives_only_located_diagnostics(source):
    assert_located(source)


@FAST
@given(mutated())
def test_mutated_flows_give_only_located_diagnostics(source):
    assert_located(source)


def test_every_seed_is_clean_before_mutation():
    for seed in SEEDS:
        found = check_source(seed, "seed.swarm")
        assert not [d for d in found if d.is_error] or "broken" in seed
