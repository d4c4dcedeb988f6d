"""Model adapters. The `openai` package itself is imported only when a client is first built."""

from swarmflow.models.openai_compat import OpenAIModel

__all__ = ["OpenAIModel"]
