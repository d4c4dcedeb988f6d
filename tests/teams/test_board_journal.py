"""The board is recorded: a run killed mid-flight resumes with its threads, messages and
deliveries (rebuilt from its events), and a mention taken by a call that never finished is
handed over again."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio

from swarmflow import run
from swarmflow.record.events import EventBase, parse_event
from swarmflow.record.files import EVENTS_FILE
from tests.support.kill import kill_when_ready
from tests.teams import board_kill_target
from tests.teams.board_kill_target import REQUEST, board_flow, policy

ROOT = Path(__file__).resolve().parents[2]


def kill_at(root: Path, hang_at: str) -> Path:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kill_when_ready([sys.executable, board_kill_target.__file__, str(root), hang_at], env)
    (run_dir,) = root.iterdir()
    return run_dir


def events(run_dir: Path) -> list[EventBase]:
    return [parse_event(line) for line in (run_dir / EVENTS_FILE).read_bytes().splitlines()]


def kinds(run_dir: Path, kind: str) -> list[Any]:
    return [e for e in events(run_dir) if getattr(e, "type", "") == kind]


def test_a_mention_taken_by_a_call_that_died_is_delivered_again_on_resume(
    tmp_path: Path,
) -> None:
    run_dir = kill_at(tmp_path, "coder-answer")
    board = ("thread_created", "board_message_posted", "mention_delivered")  # the board's record
    assert [e.type for e in events(run_dir) if e.type in board] == [
        "thread_created",
        "board_message_posted",
        "mention_delivered",
    ]
    result = anyio.run(lambda: run(board_flow, model=policy("none"), resume=run_dir))
    first, again = result.output
    assert REQUEST in first
    assert again.startswith("heard: no mention within 0 s")
    # The lead's call replayed: its thread and message were not made twice.
    assert len(kinds(run_dir, "thread_created")) == 1
    assert len(kinds(run_dir, "board_message_posted")) == 1
    delivered = kinds(run_dir, "mention_delivered")
    assert [(d.recipient, d.mode) for d in delivered] == [("coder", "blocking")] * 2


def test_a_delivery_settled_before_the_kill_is_not_repeated(tmp_path: Path) -> None:
    run_dir = kill_at(tmp_path, "coder-again")
    result = anyio.run(lambda: run(board_flow, model=policy("none"), resume=run_dir))
    first, again = result.output
    assert REQUEST in first  # replayed from the journal
    assert again.startswith("heard: no mention within 0 s")
    assert len(kinds(run_dir, "mention_delivered")) == 1
    assert len(kinds(run_dir, "board_message_posted")) == 1
