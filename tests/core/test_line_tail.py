"""`LineTail`: a live log read as it grows, by the one reader's rules, never written to."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swarmflow.core.reading import LineTail, Unreadable


def test_it_reads_on_leaves_an_unfinished_line_and_never_cuts_the_file(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"one\n\ntwo\nthr")
    tail = LineTail(path, "a log")
    assert list(tail.lines()) == [(1, b"one"), (3, b"two")]
    assert path.read_bytes().endswith(b"thr")  # a line being written is left as it is
    with path.open("ab") as fh:
        fh.write(b"ee\nfour\n")
    assert list(tail.lines()) == [(4, b"three"), (5, b"four")]
    assert list(tail.lines()) == []


def test_an_over_long_line_is_skipped_a_chunk_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"short\n" + b"x" * 5_000 + b"\nafter\n" + b"y" * 5_000)
    tail = LineTail(path, "a log", max_line=100)
    assert list(tail.lines()) == [(1, b"short"), (3, b"after")]
    assert tail.skipped == 1  # the unfinished long line waits for its end
    with path.open("ab") as fh:
        fh.write(b"\nlast\n")
    assert list(tail.lines()) == [(5, b"last")] and tail.skipped == 2


def test_a_replaced_or_cut_file_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"a\nb\n")
    tail = LineTail(path, "a log")
    assert len(list(tail.lines())) == 2
    other = tmp_path / "new.jsonl"
    other.write_bytes(b"c\nd\ne\n")
    other.replace(path)
    assert list(tail.lines()) == [(1, b"c"), (2, b"d"), (3, b"e")] and tail.restarted == 1
    path.write_bytes(b"f\n")  # cut shorter in place
    assert list(tail.lines()) == [(1, b"f")] and tail.restarted == 2


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    os.mkfifo(path)  # a read of it would wait for a writer
    with pytest.raises(Unreadable, match="must be a regular file"):
        list(LineTail(path, "a log").lines())
