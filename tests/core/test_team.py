"""Looking agents and edges up in a team."""

from __future__ import annotations

import pytest

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
