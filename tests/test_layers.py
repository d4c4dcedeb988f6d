"""Imports point inward: every part of the package has a rule saying what it may import.

A part is a top-level package or module of `swarmflow` (`swarmflow.runtime`, `swarmflow.stream`;
the package's own `__init__` is the part `swarmflow`). From the inside out: core (pure data and
rules), record (events and journals), the adapters (models, tools, workspaces), then runtime,
sessions, teams, durable, operators and runner, each built on those before it; then the front,
each part of which names what it uses. A part with no rule fails, and so does every import its
rule does not allow: those under `TYPE_CHECKING` and inside functions count too.

The `.swarm` language (`swarmflow.dsl`) is laid out as stages, each importing only the stages
before it: syntax, then check, then compile.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "swarmflow"

CORE = "swarmflow.core"
RECORD = "swarmflow.record"
MODELS = "swarmflow.models"
TOOLS = "swarmflow.tools"
WORKSPACES = "swarmflow.workspaces"
RUNTIME = "swarmflow.runtime"
SESSIONS = "swarmflow.sessions"
TEAMS = "swarmflow.teams"
DURABLE = "swarmflow.durable"
OPERATORS = "swarmflow.operators"
RUNNER = "swarmflow.runner"
CONTEXT = "swarmflow.context"
EXPERIENCE = "swarmflow.experience"
FEEDBACK = "swarmflow.feedback"
HARNESSES = "swarmflow.harnesses"
CALLS = "swarmflow.calls"

# The language-server client runs a server process, so it is an adapter like the tools.
ADAPTERS = {MODELS, TOOLS, WORKSPACES, FEEDBACK}

# The inner layers, innermost first: each may import itself and those before it.
INNER: dict[str, set[str]] = {
    CORE: {CORE},
    RECORD: {CORE, RECORD},
    # The adapters share one layer: the shared workspace uses the tools' path and file helpers.
    MODELS: {CORE, RECORD} | ADAPTERS,
    TOOLS: {CORE, RECORD} | ADAPTERS,
    WORKSPACES: {CORE, RECORD} | ADAPTERS,
    FEEDBACK: {CORE, RECORD} | ADAPTERS,
    RUNTIME: {CORE, RECORD, RUNTIME},
    # What a session's context is built from, and the experience carried across runs.
    CONTEXT: {CORE, RECORD, RUNTIME, CONTEXT},
    EXPERIENCE: {CORE, RECORD, RUNTIME, EXPERIENCE},
    SESSIONS: {CORE, RECORD, RUNTIME, CONTEXT, EXPERIENCE, SESSIONS},
    TEAMS: {CORE, RECORD, RUNTIME, CONTEXT, EXPERIENCE, SESSIONS, TEAMS},
    # A harness agent: an outside program run in the sandbox, its model calls metered.
    HARNESSES: {CORE, RECORD, RUNTIME, CONTEXT, EXPERIENCE, SESSIONS, TEAMS, HARNESSES}
    | ADAPTERS,
    DURABLE: {CORE, RECORD, RUNTIME, CONTEXT, EXPERIENCE, SESSIONS, TEAMS, DURABLE},
    OPERATORS: {CORE, RECORD, RUNTIME, CONTEXT, EXPERIENCE, SESSIONS, TEAMS, DURABLE, OPERATORS},
    # The runner wires a run together: every inner layer, the adapters included.
    RUNNER: {
        CORE,
        RECORD,
        RUNTIME,
        CONTEXT,
        EXPERIENCE,
        SESSIONS,
        TEAMS,
        HARNESSES,
        DURABLE,
        OPERATORS,
        RUNNER,
    }
    | ADAPTERS,
}

# The front: each part names what it uses (and may import itself).
FRONT: dict[str, set[str]] = {
    # The public face: each name it exports lazily lives in one of these.
    "swarmflow": {
        CORE,
        RUNTIME,
        TEAMS,
        TOOLS,
        OPERATORS,
        RUNNER,
        "swarmflow.batches",
        "swarmflow.stream",
    },
    # The test helpers: scripted models, nothing of a run.
    "swarmflow.testing": {CORE, RECORD, MODELS},
    # The prefix-caching test server: the standard library only.
    "swarmflow.caching_server": set(),
    "swarmflow.channels": {CORE, OPERATORS},
    "swarmflow.rails": {CORE, RUNTIME, SESSIONS},
    "swarmflow.stream": {CORE, RECORD, RUNTIME, RUNNER},
    # A run seen from its event log (and the flow's graph): never the command line.
    "swarmflow.report": {CORE, RECORD, RUNTIME},
    # The language compiles to operators, its agents' cards and function tools; it runs
    # nothing itself (no runner), and knows no command line, batch or report.
    "swarmflow.dsl": {CORE, RUNTIME, SESSIONS, OPERATORS, TOOLS},
    # Many runs of one flow: through the runner and the run directories (and a finished
    # run's last event, read back from its record to rebuild its result line).
    "swarmflow.batches": {CORE, RECORD, RUNTIME, DURABLE, RUNNER},
    # Ready-made flows and the demo: run, then reported; never the command line.
    "swarmflow.flows": {
        CORE,
        RECORD,
        RUNTIME,
        OPERATORS,
        RUNNER,
        WORKSPACES,
        "swarmflow.report",
        "swarmflow.testing",
    },
    # Experiments: arms x tasks x repeats through the batch engine, graded, then read back
    # from the run directories (the `tests` grader runs in the tools' sandbox).
    "swarmflow.experiments": {
        CORE,
        RECORD,
        RUNTIME,
        OPERATORS,
        RUNNER,
        TOOLS,
        WORKSPACES,
        "swarmflow.batches",
        "swarmflow.report",
        "swarmflow.flows",
        "swarmflow.testing",
    },
    # The live page over runs and experiments: read through the report and the experiments.
    "swarmflow.view": {CORE, RECORD, RUNTIME, "swarmflow.report", "swarmflow.experiments"},
}

# The metered model call, right above the runtime: every part that calls a model goes through it.
INNER[CALLS] = {CORE, RECORD, RUNTIME, CALLS}
for _caller in (CONTEXT, EXPERIENCE, SESSIONS, TEAMS, HARNESSES, DURABLE, OPERATORS, RUNNER):
    INNER[_caller].add(CALLS)
FRONT["swarmflow.experiments"].add(CALLS)  # the rubric judge's calls say their purpose

ALLOWED: dict[str, set[str]] = {
    **INNER,
    **{part: {*uses, part} for part, uses in FRONT.items()},
}
# The command line may import every part.
ALLOWED["swarmflow.cli"] = {*ALLOWED, "swarmflow.cli"}

# The stages of the `.swarm` language, in order: each imports only itself and those before it.
DSL_STAGES = ("swarmflow.dsl.syntax", "swarmflow.dsl.check", "swarmflow.dsl.compile")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _part(module: str) -> str:
    """The top-level package or module `module` belongs to (`swarmflow` for the package's own
    `__init__`)."""
    return ".".join(module.split(".")[:2])


def imports_in(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every swarmflow module `source` imports, wherever the import is written."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:  # relative: made absolute
            base = module.split(".")[: len(module.split(".")) - node.level + is_package]
            found.add(".".join([*base, *([node.module] if node.module else [])]))
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "swarmflow" or name.startswith("swarmflow.")}


def _all_imports() -> dict[str, set[str]]:
    return {
        module: imports_in(path.read_text(), module, path.name == "__init__.py")
        for module, path in _modules().items()
    }


def upward_imports(imports: dict[str, set[str]]) -> Iterator[str]:
    """Each import that its module's rule does not allow, and each module without a rule."""
    for module, targets in sorted(imports.items()):
        allowed = ALLOWED.get(_part(module))
        if allowed is None:
            yield f"{module} has no rule in tests/test_layers.py"
            continue
        for target in sorted(targets):
            if _part(target) not in allowed:
                yield f"{module} imports {target}"


def _stage(module: str) -> int | None:
    return next(
        (i for i, s in enumerate(DSL_STAGES) if module == s or module.startswith(s + ".")), None
    )


def stage_violations(imports: dict[str, set[str]]) -> Iterator[str]:
    """Each import of a later stage of the language, and each dsl module in no stage."""
    for module, targets in sorted(imports.items()):
        if _part(module) != "swarmflow.dsl" or module == "swarmflow.dsl":
            continue  # the package's face (`swarmflow.dsl`) may import every stage
        stage = _stage(module)
        if stage is None:
            yield f"{module} is in no stage of the language"
            continue
        for target in sorted(targets):
            later = _stage(target)
            if _part(target) == "swarmflow.dsl" and (later is None or later > stage):
                yield f"{module} imports {target}"


def test_every_part_of_the_package_has_a_rule() -> None:
    parts = {_part(module) for module in _modules()}
    assert sorted(parts - set(ALLOWED)) == []
    assert sorted(set(ALLOWED) - parts) == []  # and no rule names a part that is gone


def test_every_import_points_inward() -> None:
    assert list(upward_imports(_all_imports())) == []


def test_each_stage_of_the_language_imports_only_earlier_stages() -> None:
    assert list(stage_violations(_all_imports())) == []


def test_the_check_sees_an_upward_import() -> None:
    imports = _all_imports()
    imports["swarmflow.core.errors"] = {*imports["swarmflow.core.errors"], "swarmflow.runtime.flow"}
    imports["swarmflow.report.log"] = {*imports["swarmflow.report.log"], "swarmflow.cli"}
    imports["swarmflow.newpart"] = set()
    found = set(upward_imports(imports))
    assert "swarmflow.core.errors imports swarmflow.runtime.flow" in found
    assert "swarmflow.report.log imports swarmflow.cli" in found
    assert "swarmflow.newpart has no rule in tests/test_layers.py" in found


def test_the_check_sees_a_stage_importing_a_later_one() -> None:
    imports = _all_imports()
    errors = "swarmflow.dsl.syntax.errors"
    imports[errors] = {*imports[errors], "swarmflow.dsl.check.callables"}
    imports["swarmflow.dsl.check.exprs"] = {"swarmflow.dsl"}  # the face imports every stage
    found = set(stage_violations(imports))
    assert f"{errors} imports swarmflow.dsl.check.callables" in found
    assert "swarmflow.dsl.check.exprs imports swarmflow.dsl" in found


def test_every_import_is_counted_wherever_it_is_written() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import swarmflow.core.ids\n"
        "if TYPE_CHECKING:\n"
        "    from swarmflow.runtime.flow import Flow\n"
        "def f():\n"
        "    from swarmflow import run\n"
        "    from .sibling import x\n"
        "    from ..core import y\n"
    )
    assert imports_in(source, "swarmflow.report.log") == {
        "swarmflow",
        "swarmflow.core.ids",
        "swarmflow.runtime.flow",
        "swarmflow.report.sibling",
        "swarmflow.core",
    }
    assert imports_in("from . import x", "swarmflow.report", is_package=True) == {
        "swarmflow.report"
    }


@pytest.mark.parametrize("layer", ["runtime", "sessions", "teams", "durable", "operators"])
def test_the_inner_layers_never_import_openai_or_subprocess(layer: str) -> None:
    for path in (PACKAGE / layer).rglob("*.py"):
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not {name.split(".")[0] for name in names} & {"openai", "subprocess"}, path
