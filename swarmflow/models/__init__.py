"""Model adapters. The `openai` package itself is imported only when a client is first built."""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.models._modes import ModePinnedError as ModePinnedError
    from swarmflow.models.openai_compat import OpenAIModel as OpenAIModel

export_lazily(__name__)
