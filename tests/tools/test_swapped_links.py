"""The file tools attacked by a workspace that changes under them: a folder the path check
saw as a real folder is swapped for a link to the host before the tool opens anything. The
tool opens through the safe-path layer (no link followed at any component), so the swap is
refused, never followed out; links planted before the call are refused the same way."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import swarmflow.tools.base as tool_base
import swarmflow.workspaces.shared as shared_workspace
from swarmflow.core.ports import ToolContext
from swarmflow.tools import ToolRegistry
from swarmflow.workspaces import SharedWorkspace

from .conftest import make_ctx

SECRET = "host secret 5f1c"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A host folder outside the workspace, holding a secret and a file to overwrite."""
    path = tmp_path / "host"
    path.mkdir()
    (path / "secret.txt").write_text(SECRET + "\n")
    return path


@pytest.fixture
def swap_after_check(
    monkeypatch: pytest.MonkeyPatch, root: Path, outside: Path
) -> Callable[[str], None]:
    """`arm(folder)`: each time the tools' path check runs, `folder` is a real folder, and
    once it has passed the folder is replaced by a link to the host folder, as an agent's
    command racing the tool would (so whatever the tool opens after its last check goes
    through the link)."""
    real_check = tool_base.resolve_inside

    def arm(folder: str) -> None:
        def check_then_swap(*args: object, **kwargs: object) -> Path:
            if (root / folder).is_symlink():
                (root / folder).unlink()
                (root / folder).mkdir()
                (root / folder / "secret.txt").write_text("workspace copy\n")
            checked = real_check(*args, **kwargs)  # type: ignore[arg-type]
            shutil.rmtree(root / folder)
            (root / folder).symlink_to(outside, target_is_directory=True)
            return checked

        monkeypatch.setattr(tool_base, "resolve_inside", check_then_swap)
        monkeypatch.setattr(shared_workspace, "resolve_inside", check_then_swap)

    (root / "src").mkdir()
    (root / "src" / "secret.txt").write_text("workspace copy\n")
    return arm


async def test_a_swapped_folder_is_not_read_through(
    registry: ToolRegistry, ctx: ToolContext, swap_after_check: Callable[[str], None]
) -> None:
    swap_after_check("src")
    result = await registry.execute("read_file", {"path": "src/secret.txt"}, ctx)
    assert not result.ok
    assert SECRET not in result.text
    assert "symbolic link" in result.text


async def test_a_swapped_folder_is_not_written_through(
    registry: ToolRegistry,
    ctx: ToolContext,
    outside: Path,
    swap_after_check: Callable[[str], None],
) -> None:
    swap_after_check("src")
    args = {"path": "src/secret.txt", "content": "overwritten"}
    result = await registry.execute("write_file", args, ctx)
    assert not result.ok
    assert (outside / "secret.txt").read_text() == SECRET + "\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"]


@pytest.mark.parametrize("tool", ["search", "list_files"])
async def test_a_swapped_folder_is_not_walked(
    registry: ToolRegistry, ctx: ToolContext, swap_after_check: Callable[[str], None], tool: str
) -> None:
    swap_after_check("src")
    args = {"pattern": "secret", "path": "src"} if tool == "search" else {"path": "src"}
    result = await registry.execute(tool, args, ctx)
    assert SECRET not in result.text
    assert "secret.txt" not in result.text or not result.ok


async def test_a_swapped_folder_in_a_shared_workspace_is_not_read_through(
    registry: ToolRegistry, root: Path, swap_after_check: Callable[[str], None]
) -> None:
    ctx = make_ctx(SharedWorkspace(root))
    swap_after_check("src")
    result = await registry.execute("read_file", {"path": "src/secret.txt"}, ctx)
    assert not result.ok
    assert SECRET not in result.text


async def test_links_planted_to_the_host_are_refused_by_every_tool(
    registry: ToolRegistry, ctx: ToolContext, root: Path, outside: Path
) -> None:
    (root / "ok.txt").write_text("needle\n")
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "host").symlink_to(outside, target_is_directory=True)
    (root / "deep").mkdir()
    (root / "deep" / "up").symlink_to("../../host/secret.txt")
    for tool, args in [
        ("read_file", {"path": "leak.txt"}),
        ("read_file", {"path": "host/secret.txt"}),
        ("read_file", {"path": "deep/up"}),
        ("write_file", {"path": "leak.txt", "content": "x"}),
        ("write_file", {"path": "host/new.txt", "content": "x"}),
        ("edit", {"path": "leak.txt", "old": "host", "new": "guest"}),
        ("search", {"pattern": "secret", "path": "host"}),
        ("list_files", {"path": "host"}),
    ]:
        result = await registry.execute(tool, args, ctx)
        assert not result.ok, (tool, args)
        assert "outside the workspace" in result.text, (tool, args)
    found = await registry.execute("search", {"pattern": "secret|needle"}, ctx)
    assert found.text == "ok.txt:1: needle"
    listing = await registry.execute("list_files", {}, ctx)
    assert listing.text == "ok.txt"
    assert (outside / "secret.txt").read_text() == SECRET + "\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_a_link_that_stays_inside_is_read_at_its_target(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("the guide\n")
    (root / "README.md").symlink_to("docs/guide.md")
    (root / "latest").symlink_to(root / "docs", target_is_directory=True)
    read = await registry.execute("read_file", {"path": "README.md"}, ctx)
    assert read.ok and "the guide" in read.text
    written = await registry.execute(
        "write_file", {"path": "latest/guide.md", "content": "new guide\n"}, ctx
    )
    assert written.ok
    assert (root / "README.md").is_symlink()
    assert (root / "docs" / "guide.md").read_text() == "new guide\n"
    found = await registry.execute("search", {"pattern": "guide", "path": "latest"}, ctx)
    assert found.text == "docs/guide.md:1: new guide"
    # Below the start, a link is neither listed nor searched: its target is, at its own path.
    listing = await registry.execute("list_files", {}, ctx)
    assert listing.text == "docs/guide.md"


async def test_a_fifo_behind_an_inside_link_is_refused_at_once(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    os.mkfifo(root / "pipe")
    (root / "alias").symlink_to("pipe")
    for tool, args in [
        ("read_file", {"path": "alias"}),
        ("write_file", {"path": "alias", "content": "x"}),
        ("search", {"pattern": "x", "path": "alias"}),
    ]:
        result = await registry.execute(tool, args, ctx)
        assert not result.ok, tool
        assert "is a FIFO (named pipe)" in result.text, tool
