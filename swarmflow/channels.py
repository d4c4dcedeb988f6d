"""Human channels: where `human()` questions go."""

from swarmflow.core.ports import HumanChannel
from swarmflow.operators.human_channels import ConsoleHuman, DeferredHuman, NoHuman, ScriptedHuman

__all__ = ["ConsoleHuman", "DeferredHuman", "HumanChannel", "NoHuman", "ScriptedHuman"]
