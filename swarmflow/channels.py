"""Human channels: where `human()` questions go."""

from swarmflow.runtime.human import ConsoleHuman, DeferredHuman, NoHuman, ScriptedHuman
from swarmflow.runtime.ports import HumanChannel

__all__ = ["ConsoleHuman", "DeferredHuman", "HumanChannel", "NoHuman", "ScriptedHuman"]
