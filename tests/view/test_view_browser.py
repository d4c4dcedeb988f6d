"""`swarmflow view` in a real browser (Debian's chromium through Playwright): a run watched while
it goes, and the bundled experiment's folder. Skipped, with the reason, where either is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swarmflow.cli import main
from swarmflow.view.server import serving
from tests.view.conftest import CHROMIUM, CHROMIUM_ARGS, HeldRun, needs_chromium

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = f"{ROOT}/examples/experiments/experiment.py:EXPERIMENT"
WAIT = 30.0


class Watched:
    """A browser page with its console errors and every request it made."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("request", lambda r: self.requests.append(r.url))


@pytest.fixture
def browser() -> Iterator[Watched]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright")
    with sync_api.sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield Watched(launched.new_page(viewport={"width": 1400, "height": 900}))
        finally:
            launched.close()


@needs_chromium
def test_a_running_runs_timeline_grows_and_its_transcript_shows_the_tool_call(
    held_run: tuple[HeldRun, Any], browser: Watched
) -> None:
    held, portal = held_run
    assert held.entered[0].wait(WAIT)  # the run has started: its first model call waits
    with serving(held.runs) as url:
        page = browser.page
        page.goto(url)
        page.wait_for_selector("body[data-ready]", state="attached")
        page.locator("a.run-link").first.click()
        page.wait_for_selector("body[data-ready][data-live=yes]", state="attached")
        assert page.locator("#timeline .block.k-tool").count() == 0
        portal.call(held.gates[0].set)  # the model asks for the tool; the tool runs
        assert held.entered[1].wait(WAIT)  # ... and the second model call has begun
        page.wait_for_selector("#timeline .block.k-tool", timeout=WAIT * 1000)
        assert "running" in page.inner_text("#sessions")
        page.locator("#timeline .block.k-tool").first.click()
        assert "measure" in page.inner_text("#details")
        transcript = page.inner_text("#transcripts details.transcript")
        assert "measure(call_m1)" in transcript and '"river": "Nile"' in transcript
        assert "Nile is 6,650 km long" in transcript  # the tool's result
        portal.call(held.gates[1].set)
        assert held.finished.wait(WAIT)
        page.wait_for_selector(
            "body[data-status=ok][data-live=no]", state="attached", timeout=WAIT * 1000
        )
        assert "answered" in page.inner_text("#transcripts")
    assert browser.errors == []
    assert browser.requests and all(r.startswith(url) for r in browser.requests)


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view-experiment") / "exp"
    argv = ["experiment", "run", EXAMPLE, "--demo", "--out", str(out), "--tasks", "1",
            "--repeats", "1"]  # fmt: skip
    assert main(argv) == 0
    return out


@needs_chromium
def test_an_experiments_cells_link_to_the_runs_behind_them(
    experiment: Path, browser: Watched
) -> None:
    with serving(experiment) as url:
        page = browser.page
        page.goto(url)
        page.wait_for_selector("body[data-ready]", state="attached")
        page.locator("a.experiment-link").first.click()
        page.wait_for_selector("body[data-ready]", state="attached")
        assert page.locator("#progress tr[data-arm]").count() == 4
        for figure in ("end-reasons", "tokens", "wall", "token-shares"):
            box = page.locator(f"#figure-{figure} svg").bounding_box()
            assert box is not None and box["width"] > 200, figure
        page.locator("#report tr[data-arm=workflow] a.result-cell").click()
        page.wait_for_selector("a.run-link")
        assert "arm workflow" in page.inner_text("nav")
        page.locator("a.run-link").first.click()
        page.wait_for_selector("#transcripts details.transcript")
        assert "/arms/workflow/runs/" in page.url
        assert "model call 1" in (page.text_content("#transcripts") or "")
        page.go_back()
        page.go_back()
        page.wait_for_selector("#cells td.cell a.run-mark")
        page.locator("#cells td.cell[data-arm=single] a.run-mark").first.click()
        page.wait_for_selector("#timeline .block")
        assert "/arms/single/runs/" in page.url
    assert browser.errors == []
    assert browser.requests and all(r.startswith(url) for r in browser.requests)
