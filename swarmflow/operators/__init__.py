"""The six Swarm Flow operators, plus `agent` for one-shot agent calls."""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.operators.agent import agent
    from swarmflow.operators.agent_session import SessionHandle, agent_session
    from swarmflow.operators.budget import budget
    from swarmflow.operators.compact import compact
    from swarmflow.operators.human import human
    from swarmflow.operators.parallel import parallel
    from swarmflow.operators.pipeline import pipeline
    from swarmflow.operators.team import team

export_lazily(
    __name__,
    {
        "swarmflow.operators.agent": ("agent",),
        "swarmflow.operators.agent_session": ("SessionHandle", "agent_session"),
        "swarmflow.operators.budget": ("budget",),
        "swarmflow.operators.compact": ("compact",),
        "swarmflow.operators.human": ("human",),
        "swarmflow.operators.parallel": ("parallel",),
        "swarmflow.operators.pipeline": ("pipeline",),
        "swarmflow.operators.team": ("team",),
    },
)

__all__ = [
    "SessionHandle",
    "agent",
    "agent_session",
    "budget",
    "compact",
    "human",
    "parallel",
    "pipeline",
    "team",
]
