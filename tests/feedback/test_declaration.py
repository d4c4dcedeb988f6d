"""`Agent(feedback=...)` and the DSL's `feedback` key, as a user writes them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from swarmflow import Agent
from swarmflow.core.feedback_policy import Feedback
from swarmflow.dsl import check_source, load_source

FLOW = """flow f(task: str) -> str
agent coder {{ tools [edit]  workspace local  feedback {value} }}
steps {{
  return coder(task).text
}}
"""


def test_the_shorthands_and_the_full_policy() -> None:
    assert Agent("a", feedback="lsp").feedback == Feedback()
    assert Agent("a", feedback=True).feedback == Feedback()
    assert Agent("a", feedback="off").feedback is None
    custom = Agent("a", feedback={"servers": ["ruff"], "min_severity": "error", "max_items": 3})
    assert custom.feedback == Feedback(servers=("ruff",), min_severity="error", max_items=3)


@pytest.mark.parametrize(
    "value", ["lspp", {"min_severity": "fatal"}, {"max_items": 0}, {"wait": -1}, {"serve": []}]
)
def test_a_bad_policy_is_refused_when_declared(value: object) -> None:
    with pytest.raises(ValidationError):
        Agent("a", feedback=value)


def test_the_dsl_key_turns_it_on() -> None:
    flow = load_source(FLOW.format(value="lsp"), "f.swarm")
    assert flow.team.get("coder").feedback == Feedback()
    off = load_source(FLOW.format(value="off"), "f.swarm")
    assert off.team.get("coder").feedback is None


def test_the_dsl_names_a_misspelled_value() -> None:
    found = [d.message for d in check_source(FLOW.format(value="lps"), "f.swarm")]
    assert any("unknown feedback 'lps' (use lsp, off or none)" in m for m in found), found
    assert any("did you mean" in m and "lsp" in m for m in found), found
