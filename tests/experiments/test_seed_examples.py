"""The four seed examples offline (`--demo`), at a reduced size: each prints its table with the
columns its paper reports, and its HTML report passes the browser test."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from swarmflow.cli import main

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
SIZES = {
    "agentradio_ladder": ["--tasks", "2", "--repeats", "2"],
    "storm_workspaces": [],
    "jiuwen_mechanisms": ["--tasks", "2"],
    "cross_harness": ["--tasks", "1"],
}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each example run once, as the docs say to run it (one at a time)."""
    outs = {}
    for name, size in SIZES.items():
        out = tmp_path_factory.mktemp(name) / "out"
        declared = f"{ROOT}/examples/seeds/{name}.py:EXPERIMENT"
        assert main(["experiment", "run", declared, "--demo", "--out", str(out), *size]) == 0
        outs[name] = out
    return outs


def _report(out: Path, capsys: pytest.CaptureFixture[str], *more: str) -> str:
    capsys.readouterr()
    assert main(["experiment", "report", str(out), *more]) == 0
    return capsys.readouterr().out


def test_the_ladder_prints_accuracy_rubric_rate_mcnemar_churn_cost_and_noise(
    ran: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    text = _report(ran["agentradio_ladder"], capsys)
    for part in ("task acc %", "rubric %", "cost/task $", "B1 (best of 6, oracle (the grader))",
                 "B0 -> B1", "B1 -> L1", "L1 -> L2", "L2 -> L3", "Churn:",
                 "Task accuracy by category", "Run-to-run noise", "arm order (by median)",
                 "listening 100.0%", "scripted policy, no LLM"):  # fmt: skip
        assert part in text, part
    seeds = json.loads(_report(ran["agentradio_ladder"], capsys, "--json"))["seeds"]
    assert [(s["from"], s["to"]) for s in seeds["ladder"]] == [
        ("B0", "B1"),
        ("B1", "L1"),
        ("L1", "L2"),
        ("L2", "L3"),
    ]
    l2, l3 = (ran["agentradio_ladder"] / f"arms/{arm}/runs" for arm in ("L2", "L3"))
    waits = [sum('"tool":"wait_for_mention"' in line.replace(" ", "")
                 for line in (run / "events.jsonl").read_text().splitlines())
             for folder in (l2, l3) for run in sorted(folder.iterdir())]  # fmt: skip
    assert all(w > 0 for w in waits[: len(waits) // 2])  # L2 spends steps waiting
    assert all(w == 0 for w in waits[len(waits) // 2 :])  # L3 hears at its step boundaries


def test_storm_prints_weighted_and_macro_rates_and_the_shared_arms_are_refused_stale_writes(
    ran: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = ran["storm_workspaces"]
    text = _report(out, capsys)
    for part in ("weighted %", "macro %", "wall s", "cost/task $", "worktree-team",
                 "coders-2_workspace-shared", "coders-4_workspace-worktree",
                 "coders-4_workspace-shared", "workspace 100.0%, instances 100.0%"):  # fmt: skip
        assert part in text, part
    arms = json.loads(_report(out, capsys, "--json"))["seeds"]["arms"]
    assert arms["coders-4_workspace-shared"]["weighted_rate"] == 1.0
    assert arms["coders-4_workspace-worktree"]["weighted_rate"] < 1.0  # patches dropped
    refused = [line for log in out.glob("arms/coders-*_workspace-shared/runs/*/events.jsonl")
               for line in log.read_text().splitlines()
               if "your view of the workspace is out of date" in line]  # fmt: skip
    assert refused


def test_jiuwen_switches_each_mechanism_off_and_breaks_results_down_by_category(
    ran: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = ran["jiuwen_mechanisms"]
    text = _report(out, capsys)
    for part in ("all-on (reference)", "no-context", "no-feedback", "no-experience",
                 "Task accuracy by category", "Task accuracy by duration"):  # fmt: skip
        assert part in text, part
    rows = {a["name"]: a for a in json.loads(_report(out, capsys, "--json"))["arms"]}
    assert rows["no-context"]["tokens_mean"] > rows["all-on"]["tokens_mean"]
    assert rows["no-feedback"]["pass_at_1"]["k"] < rows["all-on"]["pass_at_1"]["k"]


def test_cross_harness_reports_tokens_cost_cache_hits_and_duo_against_base(
    ran: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = ran["cross_harness"]
    text = _report(out, capsys)
    for part in ("base (reference)", "duo", "tokens/task", "cost/task $", "cache hit %",
                 "vs ref"):  # fmt: skip
        assert part in text, part
    arms = {a["name"]: a for a in json.loads(_report(out, capsys, "--json"))["arms"]}
    assert arms["duo"]["vs_reference"] is not None  # the sign test, Duo against Base
    if importlib.util.find_spec("minisweagent") is None:
        pytest.skip("mini-swe-agent is not installed (pip install 'swarmflow[harness]')")
    (run,) = (out / "arms/mini-swe-agent/runs").iterdir()
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    assert [e["harness"] for e in events if e["type"] == "harness_started"] == ["mini-swe-agent"]
    calls = [e for e in events if e["type"] == "model_called"]
    assert calls and all(e["request_shape"] for e in calls)  # through the metering endpoint
    assert "harness 100.0%" in text


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
@pytest.mark.parametrize("name", list(SIZES))
def test_the_html_report_in_a_real_browser(ran: dict[str, Path], name: str, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright")
    page_path = tmp_path / "report.html"
    assert main(["experiment", "report", str(ran[name]), "--html", str(page_path)]) == 0
    errors: list[str] = []
    requests: list[str] = []
    figures = ["headline", "end-reasons", "tokens", "wall", "token-shares"]
    if name == "agentradio_ladder":
        figures.append("churn")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.as_uri())
        for figure in figures:
            box = page.locator(f"#{figure} svg").bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 50, figure
        assert page.locator("figure").count() == len(figures)
        browser.close()
    assert errors == []
    assert requests == [page_path.as_uri()]


def test_an_example_runs_on_a_named_model_and_reports_the_servers_cache_hits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.chat_server import ChatServer, completion

    usage = {"prompt_tokens": 100, "completion_tokens": 10,
             "prompt_tokens_details": {"cached_tokens": 40}}  # fmt: skip
    with ChatServer() as server:
        server.responder = lambda body: completion("I will leave it as it is.", usage=usage)
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-experiment-0123456789")
        monkeypatch.setenv("SWARMFLOW_BLOCK_MODEL_CALLS", "0")
        out = tmp_path / "exp"
        declared = f"{ROOT}/examples/seeds/storm_workspaces.py:EXPERIMENT"
        argv = ["experiment", "run", declared, "--model", "gpt-endpoint", "--out", str(out),
                "--tasks", "1"]  # fmt: skip
        assert main(argv) == 0
    assert not server.errors
    seeds = json.loads(_report(out, capsys, "--json"))["seeds"]["arms"]
    assert len(seeds) == 5
    for arm in seeds.values():
        assert arm["cache_hit"] == pytest.approx(0.4)  # 40 of every 100 prompt tokens
        assert arm["weighted_rate"] == 0.0  # nothing was changed
    assert "40.0" in _report(out, capsys)
