"""`check` imports the modules `use` names, as the run does, and checks the fields a step reads
from the flow's own pydantic models: an unknown field is an error with a did-you-mean, a
module that fails to import is one error, and what works at run time is never flagged."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmflow import run
from swarmflow.cli import build_parser
from swarmflow.dsl import DslError, check_file, load_flow
from swarmflow.testing import FunctionModel

from .helpers import EXAMPLES

TYPES = "pick_types_for_field_test"
"""The models' module, a `.py` file next to each test's flow (one module object per name, so
each test removes it from `sys.modules` when it ends)."""
MODELS = """
from typing import Any
from pydantic import BaseModel, ConfigDict, computed_field

class Horse(BaseModel):
    name: str
    odds: float

class Pick(BaseModel):
    satisfied: bool
    bet: str
    winner: Horse
    field: list[Horse] = []
    runner_up: Horse | None = None
    notes: dict[str, Any] = {}
    anything: Any = None

    @property
    def favourite(self) -> str:
        return min(self.field or [self.winner], key=lambda h: h.odds).name

    @computed_field
    @property
    def runners(self) -> int:
        return len(self.field)

class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")

def helper(text):
    return text
"""
ANSWER = {
    "satisfied": True,
    "bet": "win",
    "winner": {"name": "Ace", "odds": 2.5},
    "field": [{"name": "Ace", "odds": 2.5}, {"name": "Bolt", "odds": 4.0}],
    "notes": {"weather": "dry"},
    "anything": {"deep": {"er": 1}},
}


def main(argv: list[str]) -> int:
    """The command line, in this process, as `swarmflow` runs it."""
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code


def flow_of(steps: str, *, uses: str = f"use Pick from {TYPES}") -> str:
    return f"flow pick(task: str) -> any\n{uses}\nagent picker {{}}\nsteps {{\n{steps}\n}}\n"


ASKED = '  session picker {\n    pick = ask "Pick one for {task}" as Pick\n  }\n'
"""Steps that give `pick`, an instance of Pick (lines 5 to 7; the next step is on line 8)."""


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """A folder with the models' module in it; the module is forgotten afterwards."""
    (tmp_path / f"{TYPES}.py").write_text(MODELS)
    yield tmp_path
    sys.modules.pop(TYPES, None)


def write(folder: Path, text: str) -> Path:
    path = folder / "pick.swarm"
    path.write_text(text)
    return path


def twin_of_the_flagship(folder: Path) -> Path:
    shipped = (EXAMPLES / "parallel_coder_arbiter.swarm").read_text()
    assert "if verdict.confidence < 0.7" in shipped
    return write(folder, shipped.replace("verdict.confidence", "verdict.confidnce"))


MISSPELT = {
    "until": (
        "  repeat 3 {\n" + ASKED + "  } until pick.satisfyed\n  return pick.bet",
        (9, 11),
        "unknown field 'satisfyed' of Pick (its fields: satisfied, bet, winner, field, "
        "runner_up, notes, anything, runners); did you mean 'satisfied'?",
    ),
    "return": (
        ASKED + "  return pick.bets",
        (8, 10),
        "unknown field 'bets' of Pick (its fields: satisfied, bet, winner, field, runner_up, "
        "notes, anything, runners); did you mean 'bet'?",
    ),
}


@pytest.mark.parametrize("case", MISSPELT, ids=str)
def test_a_misspelt_field_of_an_asked_model_is_a_located_error_with_a_did_you_mean(folder, case):
    steps, place, message = MISSPELT[case]
    [found] = check_file(write(folder, flow_of(steps)))
    assert (found.severity, found.code, found.message) == ("error", "unknown-field", message)
    assert (found.line, found.column) == place


def test_a_misspelt_field_in_a_twin_of_the_shipped_example_is_an_error(folder):
    [found] = check_file(twin_of_the_flagship(folder))
    assert (found.line, found.column, found.code) == (30, 6, "unknown-field")
    assert found.message == (
        "unknown field 'confidnce' of Verdict (its fields: choice, confidence, reason); "
        "did you mean 'confidence'?"
    )


@pytest.mark.parametrize("case", [*MISSPELT, "flagship"], ids=str)
def test_check_exits_1_on_each_misspelt_field(folder, case, capsys):
    path = twin_of_the_flagship(folder) if case == "flagship" else None
    path = path or write(folder, flow_of(MISSPELT[case][0]))
    assert main(["check", str(path)]) == 1
    assert "did you mean" in capsys.readouterr().out


async def test_fields_methods_properties_and_computed_fields_check_and_run(folder):
    steps = ASKED + (
        "  return [pick.satisfied, pick.bet, pick.favourite, pick.runners, pick.notes.weather,\n"
        "          pick.anything.deep.er, pick.model_dump != none, pick.winner.model_fields_set]"
    )
    path = write(folder, flow_of(steps))
    assert check_file(path) == []
    model = FunctionModel(lambda request: json.dumps(ANSWER))
    result = await run(load_flow(path), task="the derby", model=model)
    assert result.status == "ok", result.error
    assert result.output == [True, "win", "Ace", 2, "dry", 1, True, {"name", "odds"}]


def test_nested_models_and_their_lists_are_checked(folder):
    steps = ASKED + (
        "  a = pick.winner.nmae\n"
        "  b = pick.runner_up.odds\n"
        "  for horse in pick.field {\n"
        "    c = horse.nam\n"
        "  }\n"
        "  d = pick.field[0].odd\n"
        "  return [a, b, pick.winner.name]"
    )
    found = [(d.line, d.message) for d in check_file(write(folder, flow_of(steps)))]
    assert found == [
        (8, "unknown field 'nmae' of Horse (its fields: name, odds); did you mean 'name'?"),
        (11, "unknown field 'nam' of Horse (its fields: name, odds); did you mean 'name'?"),
        (13, "unknown field 'odd' of Horse (its fields: name, odds); did you mean 'odds'?"),
    ]


def test_an_agents_structured_value_and_a_compacted_model_are_checked(folder):
    steps = (
        "  r = picker(task, output: Pick)\n"
        "  outs = parallel(2) { picker(task, output: Pick).value }\n"
        "  kept = compact(outs, keep: Pick)\n"
        "  first = outs[0]\n"
        "  return [r.value.bett, r.text, kept[0].winer, first.value, first.index]"
    )
    found = [d.message.split(" (")[0] for d in check_file(write(folder, flow_of(steps)))]
    # an outcome of `parallel` is an Ok around the answer: `.value` and `.index` are its own
    assert found == ["unknown field 'bett' of Pick", "unknown field 'winer' of Pick"]


def test_a_model_open_to_extra_fields_and_a_name_that_is_no_model(folder):
    uses = f"use Loose, helper from {TYPES}"
    steps = (
        '  session picker {\n    x = ask "q" as Loose\n    y = ask "q" as helper\n  }\n'
        "  return x.whatever"
    )
    [found] = check_file(write(folder, flow_of(steps, uses=uses)))
    assert (found.line, found.code) == (7, "misuse")
    assert found.message.startswith("'helper' is not a pydantic model")


def test_a_module_that_fails_to_import_is_one_error_not_a_traceback(tmp_path, capsys):
    (tmp_path / "broken_types_for_field_test.py").write_text("ODDS = 1 / 0\n")
    path = write(tmp_path, flow_of(ASKED + "  return pick.bet", uses=(
        "use Pick from broken_types_for_field_test"
    )))  # fmt: skip
    [found] = check_file(path)
    assert (found.line, found.column, found.code, found.severity) == (2, 1, "import", "error")
    assert found.message == (
        "importing 'broken_types_for_field_test' failed: ZeroDivisionError: division by zero; "
        "the run would fail the same way"
    )
    assert main(["check", str(path)]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err


def test_a_name_the_module_lacks_is_an_error_with_a_did_you_mean(folder):
    path = write(folder, flow_of(ASKED + "  return pick", uses=f"use Pik as Pick from {TYPES}"))
    [found] = check_file(path)
    assert (found.line, found.column, found.code) == (2, 5, "unknown-name")
    assert found.message == f"unknown name 'Pik' in module '{TYPES}'; did you mean 'Pick'?"
    # the run refuses it too, before any model is called
    with pytest.raises(DslError, match=f"module '{TYPES}' has no 'Pik'"):
        load_flow(path)


def test_a_clean_check_prints_one_line_on_stdout(folder):
    path = write(folder, flow_of(ASKED + "  return pick.winner.name"))
    done = subprocess.run(
        [sys.executable, "-m", "swarmflow.cli", "check", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"{path}: ok (flow pick: 1 agent, 0 edges)\n"
