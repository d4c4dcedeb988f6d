"""`check`: every located problem in a `.swarm` file, errors and warnings, in source order.

The passes: syntax (parser.py), declarations (check_decls.py), then the steps in order
(check_steps.py and the modules it builds on). Each pass is linear in the size of the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from swarmflow.dsl import ast
from swarmflow.dsl.callables import tool_names
from swarmflow.dsl.check_context import Context
from swarmflow.dsl.check_decls import check_declarations
from swarmflow.dsl.check_steps import StepChecker, check_agents_used, check_returns
from swarmflow.dsl.diagnostics import Diagnostic, sort_key
from swarmflow.dsl.parser import parse_module


def check_module(
    module: ast.Module,
    filename: str = "<string>",
    *,
    resolve: bool = False,
    base_dir: str | None = None,
    tools: Sequence[str] | None = None,
) -> list[Diagnostic]:
    """Problems in a parsed module, sorted by place."""
    ctx = Context(filename, base_dir=base_dir, tools=tuple(tools or tool_names()))
    check_declarations(module, ctx, resolve=resolve)
    checker = StepChecker(ctx)
    for block in module.steps[:1]:
        result = checker.check_steps(block)
        check_returns(module, result, ctx)
    check_agents_used(module, ctx)
    return sorted(ctx.diagnostics, key=sort_key)


def check_source(
    source: str,
    filename: str = "<string>",
    *,
    resolve: bool = False,
    base_dir: str | None = None,
) -> list[Diagnostic]:
    """Every problem in `source`: a syntax error alone, or all the checks' findings."""
    module, problems = parse_module(source, filename)
    if module is None:
        return problems
    found = check_module(module, filename, resolve=resolve, base_dir=base_dir)
    return sorted([*problems, *found], key=sort_key)


def check_file(path: str | Path, *, resolve: bool = True) -> list[Diagnostic]:
    """Check a `.swarm` file; imports are looked up (not run) unless `resolve=False`."""
    file = Path(path)
    source = file.read_text(encoding="utf-8")
    return check_source(source, str(path), resolve=resolve, base_dir=str(file.parent))
