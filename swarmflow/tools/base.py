"""What every built-in tool shares: one way to declare it, a strict argument base model and small
context helpers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path, PurePosixPath
from typing import Generic, TypeVar, cast, get_args

from pydantic import BaseModel, ConfigDict

from swarmflow.core.errors import ToolError
from swarmflow.core.ports import ToolContext, ToolResult, Workspace
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


class BuiltinTool(ABC, Generic[A]):
    """A built-in tool, declared in its class line: `class ReadFile(BuiltinTool[ReadFileArgs],
    name="read_file", workspace=True)`. The type parameter is the arguments model and, as for
    `@tool` functions, the docstring is the description the model reads (white space folded);
    `description=` stands in for a docstring when the text needs computed values. `run`
    validates the arguments as that model and hands them to `call`."""

    name: str
    description: str
    args: type[BaseModel]
    needs_workspace: bool
    _model: type[A]

    def __init_subclass__(
        cls, *, name: str, workspace: bool = False, description: str | None = None
    ) -> None:
        super().__init_subclass__()
        cls.name = name
        cls.description = description or " ".join((cls.__doc__ or "").split())
        cls.args = _arguments_model(cls)
        cls._model = cast("type[A]", cls.args)  # the `A` of the class line, found at run time
        cls.needs_workspace = workspace

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Run the tool with `args` validated as its own arguments model."""
        return await self.call(expect_args(args, self._model), ctx)

    @abstractmethod
    async def call(self, args: A, ctx: ToolContext) -> ToolResult:
        """What the tool does with its validated arguments."""


def _arguments_model(cls: type) -> type[BaseModel]:
    """The `A` of `class X(BuiltinTool[A], ...)`."""
    for base in getattr(cls, "__orig_bases__", ()):
        model = get_args(base)[0] if get_args(base) else None
        if isinstance(model, type) and issubclass(model, BaseModel):
            return model
    raise TypeError(f"{cls.__name__} must name its arguments model: BuiltinTool[ArgsModel]")


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
