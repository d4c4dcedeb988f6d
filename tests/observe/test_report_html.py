"""`swarmflow report RUN_DIR --html`: one self-contained page, checked in a real browser.

The browser test drives Debian's chromium through Playwright; it is skipped when either is
missing (`.ci/run` installs chromium).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from swarmflow.cli import main
from swarmflow.record.files import EVENTS_FILE
from swarmflow.report import read_log
from swarmflow.report.html import render_html

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


@pytest.fixture(scope="module")
def flagship(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run directory of one offline flagship run (the demo)."""
    runs = tmp_path_factory.mktemp("flagship-runs")
    assert main(["demo", "--runs-dir", str(runs), "--human", "auto"]) == 0
    return next(p for p in runs.iterdir() if (p / EVENTS_FILE).is_file())


def test_the_page_is_self_contained_and_holds_every_part(
    flagship: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["report", str(flagship), "--html"]) == 0
    page_path = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert page_path == flagship / "report.html"
    page = page_path.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing fetched
    assert "<script src" not in page and "<link" not in page
    for part in ('id="timeline"', 'id="cost"', 'id="graph"', 'id="events"', 'id="details"'):
        assert part in page
    log = read_log(flagship)
    sessions = {e.session for e in log.events if e.session}
    assert page.count('class="lane"') == len(sessions) + 1  # one per session, and the flow's
    assert page.count("data-seq=") >= len([e for e in log.events if e.type == "model_called"])


def test_hostile_text_in_the_log_stays_text(flagship: Path, tmp_path: Path) -> None:
    log = (flagship / EVENTS_FILE).read_text()
    evil = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
    (tmp_path / EVENTS_FILE).write_text(log.replace("make the tests pass", evil))
    page = render_html(read_log(tmp_path))
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert page.count("<script") == 2  # the event data and the page's own code


def test_a_truncated_log_still_renders_and_says_so(flagship: Path, tmp_path: Path) -> None:
    data = (flagship / EVENTS_FILE).read_bytes()
    (tmp_path / EVENTS_FILE).write_bytes(data[: len(data) // 2])
    page = render_html(read_log(tmp_path))
    assert 'id="truncated"' in page and "log truncated" in page


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_the_page_in_a_real_browser(flagship: Path, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright")
    page_path = tmp_path / "report.html"
    assert main(["report", str(flagship), "--html", str(page_path)]) == 0
    errors: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.as_uri())
        page.wait_for_selector("body[data-ready]")
        lanes = page.locator("#timeline .lane .lane-name").all_inner_texts()
        assert any(name.startswith("coder 0 · coder#") for name in lanes)
        assert any(name.startswith("reviewer") for name in lanes)
        assert any(name.startswith("arbiter · arbiter#") for name in lanes)
        kinds = set(
            page.eval_on_selector_all("#timeline .entry", "els => els.map(e => e.className)")
        )
        assert any("k-model" in k for k in kinds) and any("k-tool" in k for k in kinds)
        page.locator("#timeline .entry.k-model").first.dispatch_event("click")
        details = page.inner_text("#details-body")
        assert "model_called" in details and '"tokens_in"' in details
        page.screenshot(path=str(tmp_path / "timeline.png"), full_page=True)
        browser.close()
    assert errors == []
    assert all(url.startswith("file://") for url in requests)
    assert (tmp_path / "timeline.png").stat().st_size > 10_000
