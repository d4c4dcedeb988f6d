"""IR to `swarmflow.Flow`: the team, the budget, the imports, and a coroutine that runs the IR."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from swarmflow.core.ports import Tool, ToolProvider
from swarmflow.core.team import Agent, Team
from swarmflow.dsl.check_decls import sibling
from swarmflow.dsl.diagnostics import Diagnostic, DslError, Spot
from swarmflow.dsl.executor import execute
from swarmflow.dsl.ir import AgentSpec, ImportSpec, ParamSpec, Program
from swarmflow.runtime.flow import Flow
from swarmflow.tools.function_tool import tool

_CONVERTERS: dict[str, Any] = {"int": int, "float": float, "bool": None, "str": str}
_TRUE, _FALSE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off"}


def build_flow(program: Program, base_dir: str | Path | None = None) -> Flow[..., Any]:
    """A `Flow` that runs `program`; imports are resolved now, with located errors."""
    imports = resolve_imports(program, base_dir)
    team = Team([_agent(a, imports) for a in program.agents], edges=program.edges)

    async def run_steps(**inputs: Any) -> Any:
        return await execute(program, imports, _inputs(program, inputs))

    run_steps.__signature__ = _signature(program)  # type: ignore[attr-defined]
    run_steps.__name__ = run_steps.__qualname__ = program.name
    run_steps.__doc__ = f"Flow {program.name} from {program.filename}."
    here = str(Path(base_dir).resolve()) if base_dir is not None else "."
    made: Flow[..., Any] = Flow(
        run_steps, team=team, budget=dict(program.limits), name=program.name, card_path=(here, ".")
    )
    made.program = program  # type: ignore[attr-defined]
    return made


def _agent(spec: AgentSpec, imports: dict[str, Any]) -> Agent:
    tools = spec.options.get("tools", ())
    tools = [python_tool(imports[name]) if name in imports else name for name in tools]
    return Agent(spec.name, **{**spec.options, "tools": tools})


def python_tool(value: Any) -> Any:
    """A `use`d name listed in `tools`: a tool or tool server as is, a plain function as
    `@tool` makes it."""
    if isinstance(value, Tool | ToolProvider | type) or not callable(value):
        return value  # a non-tool is refused by Agent with a message naming it
    return tool(value)


def _signature(program: Program) -> inspect.Signature:
    params = [
        inspect.Parameter(
            p.name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=p.type,
            default=p.default if p.has_default else inspect.Parameter.empty,
        )
        for p in program.params
    ]
    return inspect.Signature(params, return_annotation=program.returns or inspect.Signature.empty)


def _inputs(program: Program, given: dict[str, Any]) -> dict[str, Any]:
    """Fill defaults and convert text from the command line to the declared type."""
    values: dict[str, Any] = {}
    for param in program.params:
        if param.name in given:
            values[param.name] = convert_input(param, given[param.name])
        elif param.has_default:
            values[param.name] = param.default
    return values


def convert_input(param: ParamSpec, value: Any) -> Any:
    """`"3"` for an `int` input is 3; a value of the right type passes unchanged."""
    if not isinstance(value, str) or param.type not in _CONVERTERS or param.type == "str":
        return value
    if param.type == "bool":
        word = value.strip().lower()
        if word in _TRUE | _FALSE:
            return word in _TRUE
        raise ValueError(f"input '{param.name}' is a bool: use true or false, not {value!r}")
    try:
        return _CONVERTERS[param.type](value)
    except ValueError:
        raise ValueError(f"input '{param.name}' is {param.type}: {value!r} is not one") from None


def resolve_imports(program: Program, base_dir: str | Path | None = None) -> dict[str, Any]:
    """Import every `use`d name; a missing module or name is a located diagnostic.

    A module is looked up on the import path first, then as a `.py` file next to the flow.
    """
    found: dict[str, Any] = {}
    problems: list[Diagnostic] = []
    for spec in program.imports:
        try:
            found[spec.local] = _import(spec, base_dir)
        except _ImportProblem as exc:
            problems.append(_diag(program, spec.line, spec.column, str(exc)))
    problems += _misused(program, found)
    if problems:
        raise DslError(problems, program.source)
    return found


def _misused(program: Program, found: dict[str, Any]) -> list[Diagnostic]:
    """Imports used as what they are not: a model that is no pydantic model, a tool that is
    neither a function nor a tool nor a tool server."""
    problems: list[Diagnostic] = []
    for name, line, column in program.models:
        model = found.get(name, BaseModel)  # an import that failed is reported already
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            why = "it cannot validate an answer; import a BaseModel subclass"
            problems.append(
                _diag(program, line, column, f"'{name}' is not a pydantic model, so {why}")
            )
    for name, line, column in program.tool_refs:
        value = found.get(name)
        if name in found and not _toolish(value):
            why = "list a function, an @tool function or a tool server here"
            problems.append(
                _diag(program, line, column, f"'{name}' is not a tool but {_what(value)}; {why}")
            )
    return problems


def _toolish(value: Any) -> bool:
    if isinstance(value, Tool | ToolProvider):
        return True
    return callable(value) and not isinstance(value, type)


def _what(value: Any) -> str:
    if isinstance(value, type):
        return f"the class {value.__name__}"
    return f"the {type(value).__name__} {repr(value)[:40]}"


class _ImportProblem(Exception):
    """An import that failed, with a message for people."""


def _load(module: str, base_dir: str | Path | None) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        path = sibling(module, base_dir)
        if exc.name != module.split(".", maxsplit=1)[0] or path is None:
            raise
    if module in sys.modules:
        return sys.modules[module]
    spec = importlib.util.spec_from_file_location(module, path)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[module] = loaded  # as an import would: one module object per name
    try:
        spec.loader.exec_module(loaded)
    except BaseException:
        del sys.modules[module]
        raise
    return loaded


def _import(spec: ImportSpec, base_dir: str | Path | None) -> Any:
    try:
        module = _load(spec.module, base_dir)
    except ModuleNotFoundError as exc:
        raise _ImportProblem(f"cannot import module '{spec.module}': {exc}") from None
    except Exception as exc:  # the module itself failed while loading; say how
        raise _ImportProblem(
            f"importing '{spec.module}' failed: {type(exc).__name__}: {exc}"
        ) from None
    try:
        return getattr(module, spec.name)
    except AttributeError:
        raise _ImportProblem(f"module '{spec.module}' has no '{spec.name}'") from None


def _diag(program: Program, line: int, column: int, message: str) -> Diagnostic:
    return Diagnostic.at(Spot(line, column), "import", message, program.filename)
