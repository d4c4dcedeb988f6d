"""The six Swarm Flow operators, plus `agent` for one-shot agent calls."""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.operators.agent import agent as agent
    from swarmflow.operators.agent_session import SessionHandle as SessionHandle
    from swarmflow.operators.agent_session import agent_session as agent_session
    from swarmflow.operators.budget import budget as budget
    from swarmflow.operators.compact import compact as compact
    from swarmflow.operators.human import human as human
    from swarmflow.operators.parallel import parallel as parallel
    from swarmflow.operators.pipeline import pipeline as pipeline
    from swarmflow.operators.team import team as team

export_lazily(__name__)
