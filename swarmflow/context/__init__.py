"""What a session's context is built from: registered processors that fire under context
pressure, each a level of progressive compression (docs/context.md).
"""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.context.registry import PROCESSORS as PROCESSORS
    from swarmflow.context.registry import Reduction as Reduction
    from swarmflow.context.registry import context_processor as context_processor
    from swarmflow.context.structure import reduce_text as reduce_text
    from swarmflow.context.summary import SUMMARY_PROMPT as SUMMARY_PROMPT
    from swarmflow.context.surroundings import Pressure as Pressure
    from swarmflow.core.context_policy import ContextPolicy as ContextPolicy

export_lazily(__name__)
