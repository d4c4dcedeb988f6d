"""A plan to a `swarmflow.Flow`: the team, the budget, the imports, and a coroutine that runs it."""

from __future__ import annotations

import inspect
import shlex
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from swarmflow.core.errors import ConfigError
from swarmflow.core.harness_spec import Harness
from swarmflow.core.ports import Tool, ToolProvider
from swarmflow.core.team import Team
from swarmflow.dsl.check.imports import import_name, not_model
from swarmflow.dsl.compile.plan import Program, compile_source
from swarmflow.dsl.compile.run import execute
from swarmflow.dsl.syntax import ast
from swarmflow.dsl.syntax.diagnostics import Diagnostic, DslError
from swarmflow.operators.agent import Agent
from swarmflow.runtime.flow import Flow
from swarmflow.tools.function_tool import FunctionTool, tool

_CONVERTED: dict[str, TypeAdapter[float]] = {t.__name__: TypeAdapter(t) for t in (int, float, bool)}
"""How a text input becomes the number or truth value its declared type asks for."""


def load_flow(path: str | Path) -> Flow[..., object]:
    """A runnable `swarmflow.Flow` from a `.swarm` file; raises `DslError` with diagnostics."""
    file = Path(path)
    try:
        source = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    made = load_source(source, str(path), base_dir=str(file.parent))
    # `swarmflow resume` loads the flow from here
    made.source_path = str(file.resolve())  # type: ignore[attr-defined]
    return made


def load_source(
    source: str, filename: str = "<string>", *, base_dir: str | None = None
) -> Flow[..., object]:
    """A runnable `swarmflow.Flow` from `.swarm` text."""
    return build_flow(compile_source(source, filename, base_dir=base_dir), base_dir)


def build_flow(program: Program, base_dir: str | Path | None = None) -> Flow[..., object]:
    """A `Flow` that runs `program`; imports are resolved now, with located errors."""
    imports = resolve_imports(program, base_dir)
    agents = [
        Agent(
            a.name,
            **{
                **a.options,
                "tools": [_tool(t, imports) for t in a.options.get("tools", ())],
                **_harness(a.options, imports),
            },
        )
        for a in program.agents
    ]

    params = {p.name: p for p in program.params}

    async def run_steps(**given: object) -> object:
        inputs = {n: p.default for n, p in params.items() if p.default is not p.empty}
        inputs.update((n, convert_input(p, given[n])) for n, p in params.items() if n in given)
        return await execute(program, imports, inputs)

    returns = program.returns or inspect.Signature.empty
    signature = inspect.Signature(program.params, return_annotation=returns)
    run_steps.__signature__ = signature  # type: ignore[attr-defined]
    run_steps.__name__ = run_steps.__qualname__ = program.name
    run_steps.__doc__ = f"Flow {program.name} from {program.filename}."
    here = str(Path(base_dir).resolve()) if base_dir is not None else "."
    made: Flow[..., object] = Flow(
        run_steps,
        team=Team(agents, edges=program.edges),
        budget=dict(program.limits),
        name=program.name,
        card_path=(here, "."),
    )
    made.program = program  # type: ignore[attr-defined]
    return made


def _tool(
    name: str, imports: dict[str, object]
) -> str | Tool | ToolProvider | FunctionTool[..., object]:
    """A built-in tool by name; a `use`d tool or tool server as is; a plain function as `@tool`
    makes it (`resolve_imports` refused every other import)."""
    value = imports.get(name, name)
    if isinstance(value, str | Tool | ToolProvider):
        return value
    assert callable(value)  # `resolve_imports` refused any other import
    return tool(value)


def _harness(options: dict[str, Any], imports: dict[str, object]) -> dict[str, Harness]:
    """An agent's `harness`: a `use`d `Harness` (or the function that makes one), or a
    command line (the checker validated both forms)."""
    given = options.get("harness")
    if given is None:
        return {}
    if given in imports:
        value = imports[given]
        value = value() if callable(value) and not isinstance(value, Harness) else value
        if not isinstance(value, Harness):
            raise ConfigError(f"harness {given!r} is not a swarmflow Harness: {value!r:.60}")
        return {"harness": value}
    return {"harness": Harness(command=tuple(shlex.split(given)))}


def convert_input(param: inspect.Parameter, value: object) -> object:
    """`"3"` for an `int` input is 3, `"yes"` for a `bool` True; other values pass unchanged."""
    kind = param.annotation
    if not isinstance(value, str) or kind not in _CONVERTED:
        return value
    try:
        return _CONVERTED[kind].validate_python(value.strip())
    except ValidationError:
        raise ValueError(f"input '{param.name}' is {kind}: {value!r} is not one") from None


def resolve_imports(program: Program, base_dir: str | Path | None = None) -> dict[str, object]:
    """Import every `use`d name; a missing module or name, or an import used as what it is
    not, is a located diagnostic. A module is looked up on the import path first, then as a
    `.py` file next to the flow."""
    found: dict[str, object] = {}
    problems: list[tuple[ast.Node, str]] = []
    for use in program.module.uses:
        for name in use.names:
            try:
                found[name.local.id] = import_name(use.module, name.name.id, base_dir)
            except ImportError as exc:
                problems.append((name, str(exc)))
    for refs, why_not in ((program.models, not_model), (_tool_refs(program.module), _not_tool)):
        for node in refs:  # an import that failed is reported already
            if node.id in found and (why := why_not(node.id, found[node.id])):
                problems.append((node, why))
    if problems:
        found_at = [Diagnostic.at(n, "import", why, program.filename) for n, why in problems]
        raise DslError(found_at, program.source)
    return found


def _not_tool(name: str, value: object) -> str:
    """Why the import `name` cannot be a tool; "" if it can."""
    if isinstance(value, Tool | ToolProvider) or (callable(value) and not isinstance(value, type)):
        return ""
    what = f"class {value.__name__}" if isinstance(value, type) else type(value).__name__
    if not isinstance(value, type):
        what += f" {repr(value)[:40]}"
    why = "list a function, an @tool function or a tool server here"
    return f"'{name}' is not a tool but the {what}; {why}"


def _tool_refs(module: ast.Module) -> list[ast.Name]:
    """Names listed in the agents' `tools`."""
    fields = (f.value for a in module.agents for f in a.fields if f.key.id == "tools")
    return [n for value in fields if isinstance(value, ast.NameList) for n in value.items]
