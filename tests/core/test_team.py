"""Looking agents and edges up in a team."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from swarmflow import Agent, Team
from swarmflow.core.errors import ConfigError


def test_agents_are_found_by_name_and_an_unknown_name_is_refused() -> None:
    team = Team([Agent("coder"), Agent("reviewer")], edges=[("coder", "reviewer")])
    assert team.get("reviewer").name == "reviewer"
    assert team.has("coder") and not team.has("arbiter")
    with pytest.raises(ConfigError, match="unknown agent 'arbiter'"):
        team.get("arbiter")


def test_a_copy_with_other_agents_and_edges_answers_for_its_own() -> None:
    team = Team([Agent("coder"), Agent("reviewer")])
    assert team.has("coder") and not team.allows("coder", "reviewer")  # looked up once
    copy = team.model_copy(
        update={"agents": (Agent("arbiter"),), "edges": (("coder", "reviewer"),)}
    )
    assert copy.has("arbiter") and not copy.has("coder")
    assert copy.get("arbiter").name == "arbiter"
    assert copy.allows("coder", "reviewer") and not team.allows("coder", "reviewer")
    assert team == Team([Agent("coder"), Agent("reviewer")])  # what is kept is not compared


@pytest.mark.parametrize("env", [5, [1, 2], ["ab", "cde"]])
def test_env_that_is_not_names_and_values_is_a_one_line_validation_error(env: object) -> None:
    from swarmflow.harnesses import Harness

    for declare in (lambda: Agent("a", env=env), lambda: Harness(name="h", command=["x"], env=env)):
        with pytest.raises(ValidationError) as caught:
            declare()
        (error,) = caught.value.errors()
        assert error["loc"] == ("env",)
        assert "env must be a mapping of names to values, or (name, value) pairs" in error["msg"]


def test_env_given_as_a_mapping_or_pairs_is_held_as_sorted_pairs() -> None:
    assert Agent("a", env={"B": 2, "A": "x"}).env == (("A", "x"), ("B", "2"))
    assert Agent("a", env=[("B", "2"), ("A", "x")]).env == Agent("a", env={"A": "x", "B": 2}).env
