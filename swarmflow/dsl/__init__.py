"""The `.swarm` language: parse, check, compile and load flows written as text.

    from swarmflow.dsl import load_flow
    fix = load_flow("examples/parallel_coder_arbiter.swarm")   # a swarmflow.Flow
    result = swarmflow.run_sync(fix, task="make the tests pass", model=...)

The stages are separate and each is usable alone: `parse` (text to syntax tree),
`check_source` / `check_file` (located diagnostics), `compile_source` (syntax tree to the plan
of steps that `swarmflow graph` draws) and `load_flow` (a runnable `Flow`). `import swarmflow`
does not import this package, and this package imports each stage when it is first used.
"""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.dsl.check import check_file, check_source
    from swarmflow.dsl.diagnostics import Diagnostic, DslError, render_all
    from swarmflow.dsl.parser import parse
    from swarmflow.dsl.plan import compile_source
    from swarmflow.dsl.to_flow import load_flow, load_source

export_lazily(
    __name__,
    {
        "swarmflow.dsl.check": ("check_file", "check_source"),
        "swarmflow.dsl.diagnostics": ("Diagnostic", "DslError", "render_all"),
        "swarmflow.dsl.parser": ("parse",),
        "swarmflow.dsl.plan": ("compile_source",),
        "swarmflow.dsl.to_flow": ("load_flow", "load_source"),
    },
)

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
