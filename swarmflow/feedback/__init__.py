"""Language-server feedback: diagnostics on agents' edits, posted at their next step."""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.feedback.servers import KNOWN_SERVERS as KNOWN_SERVERS
    from swarmflow.feedback.servers import ServerSpec as ServerSpec
    from swarmflow.feedback.service import LanguageFeedback as LanguageFeedback

export_lazily(__name__)
