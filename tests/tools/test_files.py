"""The file tools, run through the registry as the session runs them."""

from __future__ import annotations

from pathlib import Path

from swarmflow.core.ports import ToolContext
from swarmflow.tools import ToolRegistry

from .conftest import make_ctx


async def test_read_file_numbers_lines_and_pages(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    whole = await registry.execute("read_file", '{"path": "a.txt"}', ctx)
    assert whole.ok
    assert whole.text == "     1\tone\n     2\ttwo\n     3\tthree"
    page = await registry.execute("read_file", {"path": "a.txt", "offset": 2, "limit": 1}, ctx)
    assert page.text.startswith("     2\ttwo")
    assert "pass offset=3" in page.text


async def test_read_missing_file_is_an_observation(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    result = await registry.execute("read_file", '{"path": "nope.txt"}', ctx)
    assert not result.ok
    assert "no such file: 'nope.txt'" in result.text


async def test_escapes_are_refused_by_every_file_tool(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    for name, args in [
        ("read_file", {"path": "../x"}),
        ("write_file", {"path": "/tmp/x", "content": "x"}),
        ("edit", {"path": "../x", "old": "a", "new": "b"}),
        ("list_files", {"path": ".."}),
        ("search", {"pattern": "x", "path": "/etc"}),
    ]:
        result = await registry.execute(name, args, ctx)
        assert not result.ok, name
        assert "refused" in result.text, name


async def test_write_file_creates_directories(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    result = await registry.execute("write_file", {"path": "d/e/f.txt", "content": "hi\n"}, ctx)
    assert result.ok, result.text
    assert (root / "d/e/f.txt").read_text() == "hi\n"


async def test_edit_replaces_a_unique_occurrence(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "m.py").write_text("a = 1\nb = 2\n")
    result = await registry.execute("edit", {"path": "m.py", "old": "b = 2", "new": "b = 3"}, ctx)
    assert result.ok, result.text
    assert "line 2" in result.text
    assert (root / "m.py").read_text() == "a = 1\nb = 3\n"


async def test_edit_refuses_missing_and_repeated_text(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "m.py").write_text("x = 1\nx = 1\n")
    missing = await registry.execute("edit", {"path": "m.py", "old": "y", "new": "z"}, ctx)
    assert not missing.ok
    assert "occurs 0 times" in missing.text
    twice = await registry.execute("edit", {"path": "m.py", "old": "x = 1", "new": "x = 2"}, ctx)
    assert not twice.ok
    assert "occurs 2 times" in twice.text
    assert (root / "m.py").read_text() == "x = 1\nx = 1\n"


async def test_edit_keeps_crlf_line_endings(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "w.txt").write_bytes(b"a\r\nb\r\n")
    result = await registry.execute("edit", {"path": "w.txt", "old": "b", "new": "c"}, ctx)
    assert result.ok, result.text
    assert (root / "w.txt").read_bytes() == b"a\r\nc\r\n"


async def test_list_files_skips_git_and_filters(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    for name in ["src/a.py", "src/b.txt", ".git/config", "top.py"]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")
    listing = await registry.execute("list_files", {}, ctx)
    assert listing.text.splitlines() == ["src/a.py", "src/b.txt", "top.py"]
    py = await registry.execute("list_files", {"pattern": "*.py"}, ctx)
    assert py.text.splitlines() == ["src/a.py", "top.py"]
    sub = await registry.execute("list_files", {"path": "src", "pattern": "b.*"}, ctx)
    assert sub.text == "src/b.txt"


async def test_search_reports_file_line_and_text(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "pkg").mkdir()
    (root / "pkg/a.py").write_text("import os\ndef main():\n    return os.getcwd()\n")
    (root / "notes.md").write_text("main idea\n")
    (root / "blob.bin").write_bytes(b"\x00main")
    result = await registry.execute("search", {"pattern": r"main\b"}, ctx)
    assert result.text.splitlines() == ["notes.md:1: main idea", "pkg/a.py:2: def main():"]
    only_py = await registry.execute("search", {"pattern": "os", "glob": "*.py"}, ctx)
    assert only_py.text.splitlines() == ["pkg/a.py:1: import os", "pkg/a.py:3: return os.getcwd()"]
    none = await registry.execute("search", {"pattern": "MAIN"}, ctx)
    assert none.ok and "no matches" in none.text
    loud = await registry.execute("search", {"pattern": "MAIN", "ignore_case": True}, ctx)
    assert len(loud.text.splitlines()) == 2


async def test_search_rejects_a_broken_regex(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await registry.execute("search", {"pattern": "(unclosed"}, ctx)
    assert not result.ok
    assert "invalid regular expression" in result.text


async def test_file_tools_need_a_workspace(registry: ToolRegistry) -> None:
    result = await registry.execute("read_file", {"path": "a"}, make_ctx(None))
    assert not result.ok
    assert "needs a workspace" in result.text
