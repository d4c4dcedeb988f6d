"""STORM under concurrency: sessions that start together share one workspace, and no update is
lost whatever the interleaving (randomized by hypothesis)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmflow.core.ports import ToolContext, Workspace
from swarmflow.record.events import SharedFileWritten
from swarmflow.tools import ToolRegistry, default_registry
from swarmflow.workspaces import DefaultWorkspaces

Pauses = tuple[int, int, int]


async def _pause(n: int) -> None:
    for _ in range(n):
        await anyio.lowlevel.checkpoint()


async def _update(
    tools: ToolRegistry, ctx: ToolContext, path: str, change: Any, pause: int
) -> None:
    """Read `path`, wait, write `change(old text)`; on a stale write read again and retry."""
    for _ in range(50):
        read = await tools.execute("read_file", {"path": path, "limit": 2000}, ctx)
        old = (
            ""
            if not read.ok
            else "".join(line.split("\t", 1)[1] + "\n" for line in read.text.splitlines())
        )
        await _pause(pause)
        written = await tools.execute("write_file", {"path": path, "content": change(old)}, ctx)
        if written.ok:
            return
        assert "out of date" in written.text, written.text
    raise AssertionError(f"{ctx.session} made no progress on {path} in 50 attempts")


async def _scenario(root: Path, pauses: list[Pauses]) -> None:
    provider = DefaultWorkspaces(root / "run")
    tools = default_registry()
    events: list[tuple[str | None, dict[str, Any]]] = []
    seen: list[Workspace] = []

    async def session(i: int, before: int, between: int, after: int) -> None:
        await _pause(before)
        ws = await provider.acquire("shared", f"a{i}", f"s{i}")
        seen.append(ws)

        def emit(cls: type, **fields: Any) -> None:
            if cls is SharedFileWritten:
                events.append((fields["path"], fields))

        ctx = ToolContext(agent=f"a{i}", session=f"s{i}", workspace=ws, emit=emit)
        await _update(tools, ctx, "counter.txt", lambda t: f"{int(t or 0) + 1}\n", between)
        await _pause(after)
        await _update(tools, ctx, "log.txt", lambda t, i=i: t + f"line from {i}\n", between)

    async with anyio.create_task_group() as tg:
        for i, (before, between, after) in enumerate(pauses):
            tg.start_soon(session, i, before, between, after)

    n = len(pauses)
    assert all(ws is seen[0] for ws in seen)
    shared = seen[0].root
    assert (shared / "counter.txt").read_text() == f"{n}\n"
    assert sorted((shared / "log.txt").read_text().splitlines()) == sorted(
        f"line from {i}" for i in range(n)
    )
    for path in ("counter.txt", "log.txt"):
        versions = [(f["previous"], f["version"]) for p, f in events if p == path]
        assert versions == [(v - 1, v) for v in range(1, n + 1)]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 4), st.integers(0, 3)), min_size=2, max_size=6
    )
)
def test_concurrent_first_use_loses_no_update(pauses: list[Pauses]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(_scenario, Path(tmp), pauses)


def test_all_sessions_starting_together_share_one_workspace() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(_scenario, Path(tmp), [(0, 0, 0)] * 5)
