"""`swarmflow demo --feedback lsp`: the flagship flow with a language server, offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmflow.cli import build_parser
from swarmflow.record.events import parse_event
from swarmflow.record.files import EVENTS_FILE
from tests.feedback.lsp_support import language_servers_left


def test_the_demo_checks_each_coder_edit_with_ruff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(
        ["demo", "--runs-dir", "runs", "--coders", "1", "--feedback", "lsp", "--human", "auto"]
    )
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert "Evidence between steps" in out and "language servers: 1 pass," in out
    run_dir = next(p for p in (tmp_path / "runs").iterdir() if (p / EVENTS_FILE).exists())
    events = [parse_event(line) for line in (run_dir / EVENTS_FILE).read_text().splitlines()]
    checked = [e for e in events if e.type == "feedback_checked"]
    assert {(e.agent, e.server, tuple(e.files)) for e in checked} == {
        ("coder", "ruff", ("calc/stats.py",))
    }
    assert not [e for e in events if e.type == "feedback_unavailable"]
    assert language_servers_left() == []


def test_the_demo_refuses_an_unknown_feedback_mode(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["demo", "--feedback", "pyright"])
    assert exited.value.code == 2
    assert "invalid choice: 'pyright'" in capsys.readouterr().err
