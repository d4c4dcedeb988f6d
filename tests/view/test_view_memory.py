"""The view holds a bounded amount of a run however long its log: it reads a log on from where
it stopped, keeps each part of the page to its cap, and says what it let go. Memory is
measured (what stays allocated after a read), never time."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import pytest

from swarmflow.view import runstate
from swarmflow.view.runstate import RunFold, StateCache

RESULT = "r" * 1_900  # a tool result as the log keeps it: cut to 2,000 characters


class Log:
    """A run's `events.jsonl`, written line by line as a run would: many sessions, each many
    tool calls with long results, and a busy board thread."""

    def __init__(self, run_dir: Path) -> None:
        run_dir.mkdir(parents=True)
        self.path = run_dir / "events.jsonl"
        self.seq = 0
        self.write([{"type": "run_started", "flow": "big", "agents": ["a"]},
                    {"type": "thread_created", "thread": "t1", "creator": "a"}])  # fmt: skip

    def write(self, events: list[dict[str, object]]) -> None:
        lines = []
        for event in events:
            envelope = {"run_id": "big", "seq": self.seq, "ts": 0.0, "t": self.seq / 10}
            lines.append(json.dumps({**envelope, **event}))
            self.seq += 1
        with self.path.open("a") as fh:
            fh.write("\n".join(lines) + "\n")

    def grow(self, sessions: range, steps: int) -> None:
        for s in sessions:
            session = {"agent": "a", "session": f"a#{s}"}
            events: list[dict[str, object]] = [{"type": "session_started", **session}]
            events += [{"type": "tool_executed", "tool": "run_shell", "call_id": f"c{k}",
                        "result": RESULT, **session} for k in range(steps)]  # fmt: skip
            events += [{"type": "board_message_posted", "thread": "t1", "sender": "a",
                        "text": RESULT, "message_seq": self.seq + k} for k in range(5)]  # fmt: skip
            self.write(events)


@pytest.fixture
def small_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Caps small enough that a log of a few MiB passes every one of them many times."""
    for name, value in (("MAX_BLOCKS", 300), ("MAX_TRANSCRIPTS", 6), ("MAX_PARTS", 40),
                        ("MAX_POSTS", 25)):  # fmt: skip
        monkeypatch.setattr(runstate, name, value)


def _held_after(fold: RunFold) -> int:
    """The bytes still allocated once the fold has read on and made its page state."""
    gc.collect()
    tracemalloc.reset_peak()
    fold.read()
    state = fold.state()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    del state
    return held


def test_a_growing_log_is_read_on_and_what_is_held_stays_bounded(
    tmp_path: Path, small_caps: None
) -> None:
    log = Log(tmp_path / "runs" / "big")
    log.grow(range(0, 40), steps=60)
    fold = RunFold(tmp_path / "runs" / "big")
    tracemalloc.start()
    try:
        first = _held_after(fold)
        size = log.path.stat().st_size
        log.grow(range(40, 120), steps=60)  # the log triples
        assert log.path.stat().st_size > 2.5 * size
        later = _held_after(fold)
    finally:
        tracemalloc.stop()
    grown = log.path.stat().st_size - size  # about 10 MB more of log; only counts per session
    assert later - first < grown / 10, (first, later, grown)  # (the digest's) are added
    assert fold.digest.count == log.seq  # each event read once: read on, not again
    state = fold.state()
    assert sum(len(blocks) for _lane, blocks in state.lanes) == 300
    assert len(state.transcripts) == 6 and all(len(p) == 40 for p in state.transcripts.values())
    assert list(state.transcripts)[-1] == "a#119"  # the sessions last at work are kept
    assert [len(posts) for posts in state.threads.values()] == [25]
    assert len(state.digest.sessions) == 120  # the counts cover the whole run
    assert "earlier timeline blocks not drawn (the last 300 are)" in state.note
    assert "114 sessions' transcripts let go" in state.note


def test_a_line_that_is_not_an_event_or_is_being_written_is_not_taken(tmp_path: Path) -> None:
    log = Log(tmp_path / "runs" / "big")
    log.grow(range(0, 1), steps=2)
    with log.path.open("a") as fh:
        fh.write("not json\n")
        fh.write('{"run_id": "big", "seq": 99, "ts": 0.0, "t": 1.0, "type": "tool_exe')
    cache = StateCache()
    state = cache.get(tmp_path / "runs" / "big")
    assert state.digest.count == log.seq and "1 lines of the log are not events" in state.note
    with log.path.open("a") as fh:  # the line being written ends: it is read then
        fh.write('cuted", "tool": "run_shell", "session": "a#0", "agent": "a"}\n')
    assert cache.get(tmp_path / "runs" / "big").digest.count == log.seq + 1
