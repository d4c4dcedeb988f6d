"""Rails: capabilities attached to session lifecycle hooks."""

from swarmflow.runtime.goals import GoalView
from swarmflow.runtime.rail_registry import Amend, Hook, Rail, RailContext, Veto, rail

__all__ = ["Amend", "GoalView", "Hook", "Rail", "RailContext", "Veto", "rail"]
