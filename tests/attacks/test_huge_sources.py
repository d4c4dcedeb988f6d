"""Huge `.swarm` sources: a documented limit, said in one located line, with little memory."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarmflow.cli import build_parser
from swarmflow.dsl import check_source
from swarmflow.dsl.syntax.grammar import MAX_LINE_CHARS, MAX_SOURCE_CHARS, MAX_STRING_CHARS

MB = 1 << 20


def peak_of(work: Callable[[], Any]) -> tuple[Any, int]:
    """What `work()` returns, and the peak bytes Python allocated while it ran."""
    tracemalloc.start()
    try:
        return work(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def with_literal(text: str, quotes: str = '"') -> str:
    return f"flow f(task: str) -> str\nsteps {{\n  x = {quotes}{text}{quotes}\n  return x\n}}\n"


def check(argv: list[str]) -> int:
    args = build_parser().parse_args(["check", *argv])
    code: int = args.handler(args)
    return code


def test_a_ten_megabyte_literal_is_one_clear_error(tmp_path: Path, capsys: Any) -> None:
    path, source = tmp_path / "huge.swarm", with_literal("y" * 10_000_000)
    path.write_text(source, encoding="utf-8")
    code, peak = peak_of(lambda: check([str(path)]))
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0] == (
        f"{path}:1:1: error: this file holds {len(source):,} characters, more than the "
        f"{MAX_SOURCE_CHARS:,} a .swarm file may hold; split the flow, or move long text into "
        "files next to it"
    )
    assert out[-1] == "1 error, 0 warnings"
    assert peak < 100 * MB  # the text itself, read once (about 450 bytes a byte were held)


def test_a_megabyte_on_one_line_is_refused_at_that_line() -> None:
    numbers = ", ".join("1234567" for _ in range(100_000))
    source = f"flow f(task: str) -> list\nsteps {{\n  xs = [{numbers}]\n  return xs\n}}\n"
    found = check_source(source, "wide.swarm")
    assert [d.header() for d in found] == [
        f"wide.swarm:3:{MAX_LINE_CHARS + 1}: error: line 3 holds 900,007 characters, more "
        f"than the {MAX_LINE_CHARS:,} a line may hold; break it (inside ( ) and [ ] a line may "
        "break anywhere), or move long text into a file next to the flow"
    ]


def test_the_same_list_broken_over_lines_is_read() -> None:
    numbers = ",\n    ".join("1234567" for _ in range(2_000))
    source = f"flow f(task: str) -> list\nsteps {{\n  xs = [{numbers}]\n  return xs\n}}\n"
    assert check_source(source, "tall.swarm") == []


def test_a_string_over_the_limit_is_refused_where_it_starts() -> None:
    lines = ("z" * 79 + "\n") * (MAX_STRING_CHARS // 80 + 1)
    found = check_source(with_literal(lines, quotes='"""'), "card.swarm")
    assert [(d.line, d.column, d.severity) for d in found] == [(3, 7, "error")]
    assert found[0].message.startswith(
        f"this string holds {len(lines):,} characters, more than the {MAX_STRING_CHARS:,} a "
        "string may hold"
    )


def test_a_string_at_the_limit_is_read_with_a_few_bytes_a_byte() -> None:
    source = with_literal("y" * MAX_STRING_CHARS)
    found, peak = peak_of(lambda: check_source(source, "long.swarm"))
    assert found == []
    assert peak < 10 * MB  # the string's regular expression once held 120 bytes a byte
