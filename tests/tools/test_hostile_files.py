"""The file tools attacked as a hostile model would: `.git`, FIFOs, huge files, long paths,
catastrophic patterns. Every attack gets a clear refusal or a bounded answer, never a hang."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import anyio
import pytest

from swarmflow.core.ports import ToolContext
from swarmflow.tools import ToolRegistry
from swarmflow.workspaces import LocalWorkspace

from .conftest import make_ctx


def _no_grep_children() -> bool:
    """True when no `search` child process (grepper.py) is alive on this machine for us."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            zombie = stat.rsplit(")", 1)[-1].split()[0] == "Z"
            if b"grepper.py" in cmdline and not zombie and str(os.getpid()) in stat.split()[3:4]:
                return False
    return True


def _no_tool_thread_running() -> bool:
    """True when no thread is executing code of swarmflow's tools. A `@tool` function's
    daemon thread is left out: one stuck past its timeout in another test is abandoned by
    design (`swarmflow.tools.daemon_thread`), and the file tools checked here run none."""
    tools = str(Path(sys.modules["swarmflow.tools"].__file__ or "").parent)
    abandoned = {t.ident for t in threading.enumerate() if t.name.startswith("swarmflow tool ")}
    for ident, frame in sys._current_frames().items():
        if ident in abandoned:
            continue
        f = frame
        while f is not None:
            if f.f_code.co_filename.startswith(tools):
                return False
            f = f.f_back
    return True


def _sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that takes no disk space."""
    with open(path, "wb") as handle:
        handle.truncate(size)


def _names(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


@pytest.fixture
def git_ctx(root: Path) -> ToolContext:
    """A local workspace that is itself a git repository."""
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (root / "app.py").write_text("x = 1\n")
    return make_ctx(LocalWorkspace(root))


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", {"path": ".git/config", "content": "[core]\n\tfsmonitor = touch pwned\n"}),
        ("write_file", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch pwned\n"}),
        ("write_file", {"path": ".git", "content": "gitdir: fake\n"}),
        ("write_file", {"path": "sub/.GIT/config", "content": "x"}),
        ("write_file", {"path": "./.git./config", "content": "x"}),
        ("edit", {"path": ".git/config", "old": "bare", "new": "fsmonitor"}),
        ("read_file", {"path": ".git/config"}),
        ("list_files", {"path": ".git"}),
        ("search", {"pattern": "bare", "path": ".git"}),
    ],
)
async def test_git_metadata_is_off_limits(
    registry: ToolRegistry, git_ctx: ToolContext, root: Path, tool: str, args: dict[str, str]
) -> None:
    result = await registry.execute(tool, args, git_ctx)
    assert not result.ok
    assert "'.git' holds the repository's machinery" in result.text
    assert (root / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert not (root / ".git" / "hooks" / "pre-commit").exists()


async def test_a_symlink_into_git_is_refused(
    registry: ToolRegistry, git_ctx: ToolContext, root: Path
) -> None:
    (root / "cfg").symlink_to(root / ".git" / "config")
    (root / "hooks").symlink_to(root / ".git" / "hooks")
    written = await registry.execute("write_file", {"path": "cfg", "content": "evil"}, git_ctx)
    hooked = await registry.execute(
        "write_file", {"path": "hooks/post-commit", "content": "evil"}, git_ctx
    )
    assert not written.ok and not hooked.ok
    assert (root / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    listing = await registry.execute("list_files", {}, git_ctx)
    assert listing.text == "app.py"  # neither the links into .git nor .git itself
    found = await registry.execute("search", {"pattern": "bare"}, git_ctx)
    assert found.text == "no matches for 'bare'"


async def test_special_files_are_refused_without_blocking(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    os.mkfifo(root / "pipe")
    (root / "ok.txt").write_text("needle\n")
    for tool, args in [
        ("read_file", {"path": "pipe"}),
        ("edit", {"path": "pipe", "old": "a", "new": "b"}),
        ("write_file", {"path": "pipe", "content": "x"}),
        ("search", {"pattern": "needle", "path": "pipe"}),
    ]:
        result = await registry.execute(tool, args, ctx)
        assert not result.ok, tool
        assert "is a FIFO (named pipe)" in result.text, tool
    found = await registry.execute("search", {"pattern": "needle"}, ctx)
    assert found.text == "ok.txt:1: needle"
    listing = await registry.execute("list_files", {}, ctx)
    assert listing.text == "ok.txt"
    assert _no_tool_thread_running()


async def test_a_huge_sparse_file_is_refused_before_it_is_read(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    _sparse(root / "huge.log", 300 * 1024 * 1024)
    for tool, args in [
        ("read_file", {"path": "huge.log", "limit": 1}),
        ("edit", {"path": "huge.log", "old": "a", "new": "b"}),
    ]:
        result = await registry.execute(tool, args, ctx)
        assert not result.ok
        assert "'huge.log' is 314,572,800 bytes; the file tools read files up to" in result.text
    found = await registry.execute("search", {"pattern": "x"}, ctx)
    assert found.text == "no matches for 'x'"


@pytest.mark.parametrize(
    ("tool", "extra"),
    [
        ("read_file", {}),
        ("write_file", {"content": "x"}),
        ("edit", {"old": "a", "new": "b"}),
        ("list_files", {}),
        ("search", {"pattern": "x"}),
    ],
)
async def test_an_overlong_path_gets_a_clear_refusal(
    registry: ToolRegistry, ctx: ToolContext, tool: str, extra: dict[str, str]
) -> None:
    long_path = "/".join(["d" * 200] * 30)  # about 6 KB
    result = await registry.execute(tool, {"path": long_path, **extra}, ctx)
    assert not result.ok
    assert "internal error" not in result.text
    assert "characters long, the limit is 1024" in result.text
    component = await registry.execute(tool, {"path": "x" * 300, **extra}, ctx)
    assert "file names are limited to 255 bytes" in component.text


async def test_a_catastrophic_pattern_stops_at_its_time_limit(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "a.txt").write_text("first aaaa match\n" + "a" * 5000 + "!\n")
    result = await registry.execute("search", {"pattern": "(a+)+$", "timeout": 1}, ctx)
    assert result.ok
    assert result.text.startswith("search stopped: the 1s time limit was reached")
    assert "nested repetition" in result.text
    assert _no_grep_children()


async def test_a_catastrophic_pattern_stops_before_the_callers_deadline(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "a.txt").write_text("a" * 5000 + "!\n")
    with anyio.fail_after(2):  # the run's deadline, as a cancel scope around the tool
        result = await registry.execute("search", {"pattern": "(a+)+$", "timeout": 60}, ctx)
    assert result.text.startswith("search stopped: the run's deadline arrived")
    assert _no_grep_children()


async def test_cancelling_a_search_kills_its_child(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    (root / "a.txt").write_text("a" * 5000 + "!\n")
    finished: list[object] = []

    async def search() -> None:
        finished.append(await registry.execute("search", {"pattern": "(a+)+$", "timeout": 60}, ctx))

    async with anyio.create_task_group() as tg:
        tg.start_soon(search)
        # The child is only observable in /proc: no event marks its start.
        while _no_grep_children():  # noqa: ASYNC110
            await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
    assert finished == []
    assert _no_grep_children()
    assert _no_tool_thread_running()


async def test_shell_stops_before_the_callers_deadline(
    registry: ToolRegistry, host_ctx: ToolContext
) -> None:
    with anyio.fail_after(2):
        result = await registry.execute(
            "run_shell", {"command": "echo begun; sleep 60", "timeout": 600}, host_ctx
        )
    assert result.text.startswith("stopped: the run's deadline arrived after")
    assert "begun" in result.text


async def test_writes_keep_permissions_and_replace_atomically(
    registry: ToolRegistry, ctx: ToolContext, root: Path
) -> None:
    script = root / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    result = await registry.execute("edit", {"path": "run.sh", "old": "old", "new": "new"}, ctx)
    assert result.ok
    assert script.stat().st_mode & 0o777 == 0o755
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert _names(root) == ["run.sh"]  # no temporary file left
