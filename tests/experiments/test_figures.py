"""The experiment's figures answer its question: the headline, axes fitted to the data with the
limit marked, one colour per agent in every panel, and a note for each panel left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow.cli import main
from swarmflow.experiments.figures import (
    agent_colors,
    fitted_axis,
    headline,
    token_shares,
    tokens_per_run,
)
from swarmflow.experiments.report import read_experiment
from swarmflow.experiments.summary import ArmSummary

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = f"{ROOT}/examples/experiments/experiment.py:EXPERIMENT"


@pytest.fixture(scope="module")
def arms(tmp_path_factory: pytest.TempPathFactory) -> list[ArmSummary]:
    out = tmp_path_factory.mktemp("figures") / "exp"
    argv = ["experiment", "run", EXAMPLE, "--demo", "--out", str(out), "--tasks", "1",
            "--repeats", "1"]  # fmt: skip
    assert main(argv) == 0
    return read_experiment(out).arms


def test_the_headline_has_pass_adherence_and_the_effects_per_arm(arms: list[ArmSummary]) -> None:
    svg = headline(arms)
    for text in ("Pass@1 (95% CI)", "adherence (95% CI)", "against the reference", "ITT",
                 "CACE", "single (ref)", "team-mandatory"):  # fmt: skip
        assert text in svg, text
    assert svg.count(">reference<") == 1  # the reference arm, at 0, once


def test_an_axis_fits_the_runs_and_marks_a_far_limit_at_its_edge() -> None:
    upper, beyond = fitted_axis([4_600.0, 4_700.0], [60_000.0])
    assert 4_700 < upper < 6_000 and beyond == [60_000.0]
    upper, beyond = fitted_axis([50.0, 90.0], [100.0])
    assert upper >= 100 and beyond == []  # a limit near the data is drawn on the axis
    assert fitted_axis([], [])[0] > 0


def test_the_tokens_figure_marks_each_allowance_beyond_its_axis(arms: list[ArmSummary]) -> None:
    svg = tokens_per_run(arms)
    allowances = {max(r.allowance or 0 for r in a.rows) for a in arms}
    for allowance in allowances:
        assert f"limit {allowance:,} →" in svg


def test_an_agent_has_one_colour_and_a_panel_left_out_is_named(arms: list[ArmSummary]) -> None:
    colors = agent_colors(arms)
    assert len(set(colors.values())) == len(colors)  # no two agents share one
    svg = token_shares(arms)
    single = [a.name for a in arms if len(a.shares()) <= 1]
    assert single and f"Left out: {', '.join(single)} (one agent" in svg
    for arm in arms:
        if len(arm.shares()) > 1:
            for agent in arm.shares():
                assert f"fill: {colors[agent]}" in svg, agent
