"""Seeing a run: its report in text and HTML, its graphs, and its events as OTel spans.

Everything here reads the run's event log (or its events in memory) and nothing else.
"""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.report.digest import Digest, agent_label, digest
    from swarmflow.report.log import LogError, RunLog, read_log
    from swarmflow.report.text import DEMO_MODEL, model_label, render_report, report_from_dir

export_lazily(
    __name__,
    {
        "swarmflow.report.digest": ("Digest", "agent_label", "digest"),
        "swarmflow.report.log": ("LogError", "RunLog", "read_log"),
        "swarmflow.report.text": ("DEMO_MODEL", "model_label", "render_report", "report_from_dir"),
    },
)

__all__ = [
    "DEMO_MODEL",
    "Digest",
    "LogError",
    "RunLog",
    "agent_label",
    "digest",
    "model_label",
    "read_log",
    "render_report",
    "report_from_dir",
]
