"""The `.swarm` language: parse, check, compile and load flows written as text.

    from swarmflow.dsl import load_flow
    fix = load_flow("examples/parallel_coder_arbiter.swarm")   # a swarmflow.Flow
    result = swarmflow.run_sync(fix, task="make the tests pass", model=...)

The stages are separate and each is usable alone: `parse` (text to syntax tree),
`check_source` / `check_file` (located diagnostics), `compile_source` (syntax tree to the plan
of steps that `swarmflow graph` draws) and `load_flow` (a runnable `Flow`). `import swarmflow`
does not import this package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swarmflow.dsl.diagnostics import Diagnostic, DslError, render_all

__all__ = [
    "Diagnostic",
    "DslError",
    "check_file",
    "check_source",
    "compile_source",
    "load_flow",
    "load_source",
    "parse",
    "render_all",
]


def parse(source: str, filename: str = "<string>") -> Any:
    """The syntax tree (`swarmflow.dsl.ast.Module`); raises `DslError` on a syntax error."""
    from swarmflow.dsl.parser import parse as _parse

    return _parse(source, filename)


def check_source(
    source: str,
    filename: str = "<string>",
    *,
    resolve: bool = False,
    base_dir: str | None = None,
) -> list[Diagnostic]:
    """Every located problem in `source`, errors and warnings, in source order."""
    from swarmflow.dsl.check import check_source as _check

    return _check(source, filename, resolve=resolve, base_dir=base_dir)


def check_file(path: str | Path, *, resolve: bool = True) -> list[Diagnostic]:
    """Every located problem in a `.swarm` file (imports are found, not run)."""
    from swarmflow.dsl.check import check_file as _check

    return _check(path, resolve=resolve)


def compile_source(source: str, filename: str = "<string>", *, base_dir: str | None = None) -> Any:
    """The plan of steps (`swarmflow.dsl.plan.Program`); raises `DslError` if `check` finds
    errors."""
    from swarmflow.dsl.check import check_module
    from swarmflow.dsl.parser import parse_module
    from swarmflow.dsl.plan import plan_module

    module, problems = parse_module(source, filename)
    if module is None:
        raise DslError(problems, source)
    found = [*problems, *check_module(module, filename, base_dir=base_dir)]
    if any(d.is_error for d in found):
        raise DslError([d for d in found if d.is_error], source)
    return plan_module(module, source, filename)


def load_source(source: str, filename: str = "<string>", *, base_dir: str | None = None) -> Any:
    """A runnable `swarmflow.Flow` from `.swarm` text."""
    from swarmflow.dsl.to_flow import build_flow

    program = compile_source(source, filename, base_dir=base_dir)
    return build_flow(program, base_dir)


def load_flow(path: str | Path) -> Any:
    """A runnable `swarmflow.Flow` from a `.swarm` file; raises `DslError` with diagnostics."""
    file = Path(path)
    source = file.read_text(encoding="utf-8")
    made = load_source(source, str(path), base_dir=str(file.parent))
    made.source_path = str(file.resolve())  # `swarmflow resume` loads the flow from here
    return made
