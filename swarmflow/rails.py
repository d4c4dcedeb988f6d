"""Rails: capabilities attached to session lifecycle hooks."""

from swarmflow.runtime.rails import Amend, Hook, Rail, RailContext, Veto, rail
from swarmflow.sessions.goals import GoalView

__all__ = ["Amend", "GoalView", "Hook", "Rail", "RailContext", "Veto", "rail"]
