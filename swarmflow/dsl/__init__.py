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
    from swarmflow.dsl.check.check import check_file as check_file
    from swarmflow.dsl.check.check import check_source as check_source
    from swarmflow.dsl.compile.plan import compile_source as compile_source
    from swarmflow.dsl.compile.to_flow import load_flow as load_flow
    from swarmflow.dsl.compile.to_flow import load_source as load_source
    from swarmflow.dsl.syntax.diagnostics import Diagnostic as Diagnostic
    from swarmflow.dsl.syntax.diagnostics import DslError as DslError
    from swarmflow.dsl.syntax.diagnostics import render_all as render_all
    from swarmflow.dsl.syntax.parser import parse as parse

export_lazily(__name__)
