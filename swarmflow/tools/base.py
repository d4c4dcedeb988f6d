"""What every built-in tool shares: a strict argument base model and small context helpers."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from swarmflow.core.errors import ToolError
from swarmflow.core.ports import ToolContext, Workspace
from swarmflow.tools.paths import private_dirs, resolve_inside

A = TypeVar("A", bound=BaseModel)


class ArgsModel(BaseModel):
    """Base of every tool's arguments: unknown fields are errors, so typos reach the model."""

    # Built on first use, not at import: the built-in tools' models would cost `import swarmflow`
    # pydantic's plugin loader and a schema build each.
    model_config = ConfigDict(extra="forbid", defer_build=True)


def expect_args(args: BaseModel, model: type[A]) -> A:
    """`args` as the tool's own model, re-validating when the caller passed another model."""
    if isinstance(args, model):
        return args
    return model.model_validate(args.model_dump())


def workspace_of(ctx: ToolContext, tool: str) -> Workspace:
    """The session's workspace, or a ToolError saying the agent has none."""
    if ctx.workspace is None:
        raise ToolError(f"tool {tool!r} needs a workspace, but this agent has none")
    return ctx.workspace


def root_of(ctx: ToolContext, tool: str) -> Path:
    """The root directory of the session's workspace."""
    return workspace_of(ctx, tool).root


def private_of(ctx: ToolContext, root: Path) -> tuple[Path, ...]:
    """The run's folders inside the workspace `root`, which no tool shows (`private_dirs`)."""
    return private_dirs(root, ctx.run_dir)


def resolve_path(ctx: ToolContext, tool: str, user_path: str) -> Path:
    """`user_path` resolved inside the session's workspace, as every file tool refuses paths:
    outside it, in `.git`, or in the run's own records."""
    root = root_of(ctx, tool)
    return resolve_inside(root, user_path, private_of(ctx, root))


def locate(ctx: ToolContext, tool: str, user_path: str) -> tuple[Path, PurePosixPath]:
    """The workspace's real root and `user_path`'s real path below it (refused as
    `resolve_path` refuses), to open through the safe-path layer (`core.safe_paths`)."""
    target = resolve_path(ctx, tool, user_path)
    real_root = root_of(ctx, tool).resolve()
    return real_root, PurePosixPath(target.relative_to(real_root).as_posix())
