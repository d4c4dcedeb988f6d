"""Experience across runs: a run's reflection writes notes, a later run on a similar task is
offered them in its card (and records it), `forget` removes them, concurrent writers lose
nothing, and a forged or corrupt store is one clear error."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from swarmflow import Agent, ConfigError, agent
from swarmflow.cli import main
from swarmflow.core.messages import ModelRequest
from swarmflow.experience.reflect import REFLECT_PROMPT
from swarmflow.experience.store import ExperienceStore, NewNote
from swarmflow.record.events import (
    ExperienceRefused,
    ExperienceRetrieved,
    ExperienceWritten,
    ModelCalled,
)
from swarmflow.testing import FunctionModel
from tests.runtime.helpers import run_one

NOTES = (
    "worked: running pytest tests/test_stats.py -x showed median() returning the upper middle\n"
    "failed: editing calc/mean.py changed nothing; the bug is in calc/stats.py\n"
    "this line is not a note and is ignored"
)


def _model(reflection: str = NOTES) -> FunctionModel:
    def policy(request: ModelRequest) -> str:
        if request.system == REFLECT_PROMPT:
            return reflection
        return "fixed it"

    return FunctionModel(policy)


async def _run(store: Path | bool, task: str, model: FunctionModel, **options: object) -> object:
    coder = Agent("coder", card="You fix bugs in the calc package.")
    return await run_one([coder], lambda: agent("coder", task), model, experience=store,
                         **options)  # fmt: skip


def _of(result: object, cls: type) -> list:  # type: ignore[type-arg]
    return [e for e in result.events if isinstance(e, cls)]  # type: ignore[attr-defined]


async def test_a_note_from_one_run_is_offered_to_the_next_on_a_similar_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "experience.db"
    first = await _run(store, "Fix median() in calc/stats.py for lists of even length", _model())
    written = _of(first, ExperienceWritten)
    assert [n["kind"] for n in written[0].notes] == ["worked", "failed"]
    assert _of(first, ExperienceRetrieved)[0].notes == []  # nothing to offer yet
    reflection = [e for e in _of(first, ModelCalled) if e.purpose == "reflection"]
    assert len(reflection) == 1 and reflection[0].agent == "coder"

    model = _model("")
    second = await _run(store, "median of an even number of values is wrong (calc/stats.py)",
                        model, runs_root=tmp_path / "runs")  # fmt: skip
    offered = _of(second, ExperienceRetrieved)[0].notes
    assert {n["id"] for n in offered} == {n["id"] for n in written[0].notes}
    card = model.requests[0].system
    assert card.startswith("You fix bugs in the calc package.")
    assert "worked: running pytest tests/test_stats.py -x" in card
    assert _of(second, ExperienceWritten)[0].notes == []  # an empty reflection writes none

    assert main(["experience", "--store", str(store), "list"]) == 0
    listing = capsys.readouterr().out
    assert "coder" in listing and "failed" in listing
    first_id = written[0].notes[0]["id"]
    assert main(["experience", "--store", str(store), "show", str(first_id)]) == 0
    assert "task: Fix median() in calc/stats.py" in capsys.readouterr().out
    ids = [str(n["id"]) for n in written[0].notes]
    assert main(["experience", "--store", str(store), "forget", *ids]) == 0
    assert "forgot 2 notes" in capsys.readouterr().out
    third = await _run(store, "median of an even number of values is wrong", _model(""))
    assert _of(third, ExperienceRetrieved)[0].notes == []
    assert main(["experience", "--store", str(store), "forget", ids[0]]) == 1


async def test_a_run_without_experience_reads_and_writes_none(tmp_path: Path) -> None:
    model = _model()
    result = await _run(False, "Fix median()", model)
    assert not _of(result, ExperienceRetrieved) and not _of(result, ExperienceWritten)
    assert len(model.requests) == 1  # no reflection call


async def test_a_reflection_the_budget_cannot_pay_for_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "experience.db"
    result = await _run(store, "Fix median()", _model(), budget={"calls": 1})
    refused = _of(result, ExperienceRefused)
    assert refused and "calls" in refused[0].reason
    assert ExperienceStore(store).notes() == []


_WRITER = """
import sys
from swarmflow.experience.store import ExperienceStore, NewNote
store = ExperienceStore(sys.argv[1])
for n in range(int(sys.argv[3])):
    store.add([NewNote("coder", "note", f"{sys.argv[2]} note {n}", "task", "repo", sys.argv[2])])
"""


def test_two_writers_at_once_lose_nothing(tmp_path: Path) -> None:
    store = tmp_path / "experience.db"
    ExperienceStore(store)
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(store), name, "150"])
        for name in ("one", "two")
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    notes = ExperienceStore(store).notes()
    assert len(notes) == 300
    assert {n.run_id for n in notes} == {"one", "two"}
    assert len({n.id for n in notes}) == 300


async def test_a_corrupt_or_forged_store_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not a database at all " * 100)
    forged = tmp_path / "forged.db"
    with sqlite3.connect(forged) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER, text TEXT)")
    for path, says in ((corrupt, "not a usable swarmflow experience store"),
                       (forged, "another program's database")):  # fmt: skip
        with pytest.raises(ConfigError, match=says):
            await _run(path, "Fix median()", _model(), runs_root=tmp_path / "runs")
        assert main(["experience", "--store", str(path), "list"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()  # refused before any run directory was made
    assert corrupt.read_bytes().startswith(b"not a database")  # and nothing was changed
    assert main(["experience", "--store", str(tmp_path / "none.db"), "list"]) == 2
    assert "no experience store" in capsys.readouterr().err


def test_notes_are_found_by_their_words_not_by_operators(tmp_path: Path) -> None:
    store = ExperienceStore(tmp_path / "experience.db")
    store.add([NewNote("coder", "note", "the NEAR operator is a word here", "t", "r", "run")])
    assert store.search("coder", 'NEAR" OR "x') != []  # quotes and operators are words
    assert store.search("coder", "") == [] and store.search("reviewer", "operator") == []


def test_a_note_its_run_stored_already_is_not_stored_twice(tmp_path: Path) -> None:
    store = ExperienceStore(tmp_path / "experience.db")
    note = NewNote("coder", "worked", "pytest -x found it", "t", "r", "run-1")
    [first] = store.add([note])
    [again, other] = store.add([note, NewNote("coder", "failed", "guessing", "t", "r", "run-1")])
    assert again == first  # a resumed run's replayed reflection stores nothing new
    [later] = store.add([NewNote("coder", "worked", "pytest -x found it", "t", "r", "run-2")])
    assert [n.id for n in store.notes()] == [first.id, other.id, later.id]


async def test_a_note_written_into_the_store_by_hand_is_cut_in_the_card(tmp_path: Path) -> None:
    store = tmp_path / "experience.db"
    ExperienceStore(store).add([NewNote("coder", "note", "median " + "x" * 100_000, "t", "", "r")])
    model = _model("")
    result = await _run(store, "Fix median() in calc/stats.py", model)
    assert len(_of(result, ExperienceRetrieved)[0].notes) == 1
    assert len(model.requests[0].system) < 1_000


def test_swarmflow_run_with_a_forged_store_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    flow = tmp_path / "fix.swarm"
    flow.write_text("flow fix(task: str) -> str\n\nagent coder {\n  context [offload]\n}\n\n"
                    "steps {\n  return coder(task).text\n}\n")  # fmt: skip
    forged = tmp_path / "forged.db"
    forged.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4_000)
    monkeypatch.chdir(tmp_path)
    code = main(["run", str(flow), "--demo", "--input", "task=fix it", "--experience", str(forged)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"experience store {forged}" in err
    assert not (tmp_path / "runs").exists()


async def test_a_store_that_goes_bad_during_the_run_is_recorded_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    store = tmp_path / "experience.db"
    ExperienceStore(store)

    def policy(request: ModelRequest) -> str:
        return "fixed it"

    def overwrite() -> None:
        for leftover in tmp_path.glob("experience.db*"):
            leftover.unlink()
        store.write_bytes(b"overwritten by something else " * 200)

    async def body() -> str:
        overwrite()  # after the run opened the store, before the session reads it
        return (await agent("coder", "Fix median()")).text

    result = await run_one([Agent("coder")], body, FunctionModel(policy), experience=store)
    assert result.status == "ok" and result.output == "fixed it"
    refused = _of(result, ExperienceRefused)
    assert refused and all(str(store) in e.reason for e in refused)
