"""The six Swarm Flow operators, plus `agent` for one-shot agent calls."""

from swarmflow.operators.agent import agent
from swarmflow.operators.agent_session import SessionHandle, agent_session
from swarmflow.operators.budget import budget
from swarmflow.operators.compact import compact
from swarmflow.operators.human import human
from swarmflow.operators.parallel import parallel
from swarmflow.operators.pipeline import pipeline
from swarmflow.operators.team import team

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
