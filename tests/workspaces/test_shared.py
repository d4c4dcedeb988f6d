"""The STORM shared workspace: versions, snapshots and stale-write refusals."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from swarmflow.core.errors import ToolError, WorkspaceEscape
from swarmflow.core.ports import ToolContext, Workspace
from swarmflow.tools import VersionedFiles, default_registry
from swarmflow.workspaces import SharedWorkspace, StaleWrite


def _emit(*args: object, **fields: object) -> None:
    """Drop events."""


@pytest.fixture
def shared(tmp_path: Path) -> SharedWorkspace:
    root = tmp_path / "shared"
    root.mkdir()
    (root / "api.py").write_text("def f():\n    return 1\n")
    (root / "util.py").write_text("X = 1\n")
    return SharedWorkspace(root)


def test_it_is_a_workspace_with_versioned_files(shared: SharedWorkspace) -> None:
    assert isinstance(shared, Workspace) and isinstance(shared, VersionedFiles)
    assert shared.kind == "shared"


async def test_stale_write_is_refused_with_content_and_diff(shared: SharedWorkspace) -> None:
    assert await shared.read_text("api.py", "A") == "def f():\n    return 1\n"
    await shared.read_text("api.py", "B")
    await shared.write_text("api.py", "def f():\n    return 2\n", "B")
    assert shared.version("api.py") == 1

    with pytest.raises(StaleWrite) as info:
        await shared.write_text("api.py", "def f():\n    return 3\n", "A")
    err = info.value
    assert err.stale == ("api.py",)
    assert err.current == "def f():\n    return 2\n"
    assert "-    return 1\n+    return 2\n" in err.diff
    assert "you read version 0, it is now version 1 (changed by B)" in err.message
    assert "return 2" in err.message
    assert (shared.root / "api.py").read_text().endswith("return 2\n")

    await shared.read_text("api.py", "A")
    await shared.write_text("api.py", "def f():\n    return 3\n", "A")
    assert shared.version("api.py") == 2
    assert shared.snapshot("A") == {"api.py": 2}


async def test_a_stale_dependency_blocks_writes_elsewhere(shared: SharedWorkspace) -> None:
    await shared.read_text("util.py", "A")
    await shared.read_text("util.py", "B")
    await shared.write_text("util.py", "X = 2\n", "B")
    with pytest.raises(StaleWrite) as info:
        await shared.write_text("new.py", "from util import X\n", "A")
    assert info.value.stale == ("util.py",)
    assert "+X = 2" in info.value.diff
    assert not (shared.root / "new.py").exists()


async def test_existing_files_must_be_read_before_written(shared: SharedWorkspace) -> None:
    with pytest.raises(StaleWrite, match="you have not read it"):
        await shared.write_text("api.py", "x", "A")
    await shared.write_text("fresh.py", "y = 1\n", "A")
    assert shared.version("fresh.py") == 1
    assert shared.snapshot("A") == {"fresh.py": 1}


async def test_outside_changes_count_as_new_versions(shared: SharedWorkspace) -> None:
    await shared.read_text("util.py", "A")
    (shared.root / "util.py").write_text("X = 99\n")
    with pytest.raises(StaleWrite, match="changed outside the workspace tools"):
        await shared.write_text("util.py", "X = 3\n", "A")


async def test_paths_are_checked(shared: SharedWorkspace) -> None:
    with pytest.raises(WorkspaceEscape):
        await shared.read_text("../secret", "A")
    with pytest.raises(ToolError, match="no such file"):
        await shared.read_text("missing.py", "A")
    assert await shared.read_text("./api.py", None) == await shared.read_text("api.py", "A")


async def test_concurrent_read_modify_write_loses_no_update(shared: SharedWorkspace) -> None:
    (shared.root / "count.txt").write_text("0")

    async def bump(reader: str) -> None:
        while True:
            value = int(await shared.read_text("count.txt", reader))
            await anyio.lowlevel.checkpoint()  # let the other writers interleave
            try:
                await shared.write_text("count.txt", str(value + 1), reader)
                return
            except StaleWrite:
                continue

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for i in range(12):
                tg.start_soon(bump, f"r{i}")
    assert (shared.root / "count.txt").read_text() == "12"
    assert shared.version("count.txt") == 12


async def test_file_tools_go_through_the_snapshot_check(shared: SharedWorkspace) -> None:
    registry = default_registry()
    a = ToolContext(agent="a", session="A", workspace=shared, emit=_emit)
    b = ToolContext(agent="b", session="B", workspace=shared, emit=_emit)
    await registry.execute("read_file", {"path": "api.py"}, a)
    await registry.execute("read_file", {"path": "api.py"}, b)
    ok = await registry.execute("edit", {"path": "api.py", "old": "1", "new": "2"}, b)
    assert ok.ok, ok.text
    refused = await registry.execute("edit", {"path": "api.py", "old": "2", "new": "3"}, a)
    assert not refused.ok
    assert "refused" in refused.text and "+    return 2" in refused.text
    blind = await registry.execute("write_file", {"path": "util.py", "content": "X = 5\n"}, b)
    assert not blind.ok and "you have not read it" in blind.text
