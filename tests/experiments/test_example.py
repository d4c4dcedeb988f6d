"""The example experiment end to end, offline (`--demo`), at a reduced size.

What the report says is checked against a direct read of the run directories, and each run's
adherence against what `swarmflow report` prints for that run.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from swarmflow.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = f"{ROOT}/examples/experiments/experiment.py:EXPERIMENT"
ARMS = ("single", "workflow", "team-optional", "team-mandatory")
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("example") / "exp"
    argv = ["experiment", "run", EXAMPLE, "--demo", "--out", str(out), "--tasks", "2",
            "--repeats", "1"]  # fmt: skip
    assert main(argv) == 0
    return out


def _events(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def _report_json(out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(["experiment", "report", str(out), "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_the_report_counts_what_the_run_directories_hold(
    done: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report_json(done, capsys)
    grades = [json.loads(line) for line in (done / "grades.jsonl").read_text().splitlines()]
    resolved = Counter(g["arm"] for g in grades if g["resolved"])
    for arm in report["arms"]:  # type: ignore[attr-defined]
        runs = sorted((done / "arms" / arm["name"] / "runs").iterdir())
        finished = [r for r in runs if _events(r)[-1]["type"] == "run_finished"]
        assert arm["runs"] == len(finished) == 2
        assert arm["pass_at_1"]["k"] == resolved[arm["name"]]
        tokens = [sum(int(e["tokens_in"]) + int(e["tokens_out"]) for e in _events(r)
                      if e["type"] == "model_called") for r in runs]  # fmt: skip
        assert arm["tokens_mean"] == pytest.approx(sum(tokens) / len(tokens))
    assert [a["name"] for a in report["arms"]] == list(ARMS)  # type: ignore[index]
    vs = {a["name"]: a["vs_reference"] for a in report["arms"]}  # type: ignore[index]
    assert vs["single"] is None
    pairs = vs["workflow"]
    assert pairs["both"] + pairs["only_arm"] + pairs["only_reference"] + pairs["neither"] == 2


def test_each_runs_adherence_is_what_swarmflow_report_says(
    done: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = list(csv.DictReader((done / "rows.csv").read_text().splitlines()))
    assert len(rows) == 8
    assert len({(r["arm"], r["task"], r["repeat"]) for r in rows}) == 8
    seen = set()
    for row in rows:
        capsys.readouterr()
        assert main(["report", row["run_dir"]]) == 0
        text = capsys.readouterr().out
        assert f"adherence: {'yes' if row['adherent'] == 'True' else 'NO'}" in text
        for axis in ("participation", "role boundary", "budget sharing", "information flow"):
            mark = "ok " if row[axis.replace(" ", "_")] == "True" else "DEV"
            assert f"[{mark}] {axis}" in text
        seen.add(row["adherent"])
    assert rows[0]["model"] == "experiment-scripted (scripted policy, no LLM)"


def test_the_text_report_has_every_table(done: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["experiment", "report", str(done)]) == 0
    text = capsys.readouterr().out
    for part in ("Pass@1 % [95% CI]", "Adherence % [95% CI]", "Unverified %", "CACE",
                 "only ref", "paired A=1", "cache hit %", "engine s", "token budget",
                 "single (reference)", "scripted policy, no LLM"):  # fmt: skip
        assert part in text


def test_a_second_run_pays_for_nothing(done: Path) -> None:
    before = {p: p.stat().st_size for p in done.glob("arms/*/runs/*/events.jsonl")}
    grades = (done / "grades.jsonl").read_text()
    argv = ["experiment", "run", EXAMPLE, "--demo", "--out", str(done), "--tasks", "2",
            "--repeats", "1"]  # fmt: skip
    assert main(argv) == 0
    assert {p: p.stat().st_size for p in done.glob("arms/*/runs/*/events.jsonl")} == before
    assert (done / "grades.jsonl").read_text() == grades


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_the_html_report_in_a_real_browser(done: Path, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright")
    page_path = tmp_path / "report.html"
    assert main(["experiment", "report", str(done), "--html", str(page_path)]) == 0
    errors: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.as_uri())
        for figure in ("end-reasons", "tokens", "wall", "token-shares"):
            box = page.locator(f"#{figure} svg").bounding_box()
            assert box is not None and box["width"] > 200 and box["height"] > 50, figure
        assert "team-mandatory" in page.inner_text("#end-reasons")
        browser.close()
    assert errors == []
    assert requests == [page_path.as_uri()]
