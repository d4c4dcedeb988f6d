"""Ready-made flows. The flagship: parallel coders, pipelined reviewers, a stateful arbiter."""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.flows.demo import BANNER, demo_model
    from swarmflow.flows.parallel_coder_arbiter import (
        TEAM,
        FixResult,
        Review,
        Verdict,
        make_flow,
        solve,
    )
    from swarmflow.flows.progress import ProgressSink
    from swarmflow.flows.target_repo import DEMO_TASK, create_target
    from swarmflow.report import render_report, report_from_dir

export_lazily(
    __name__,
    {
        "swarmflow.flows.demo": ("BANNER", "demo_model"),
        "swarmflow.flows.parallel_coder_arbiter": (
            "TEAM",
            "FixResult",
            "Review",
            "Verdict",
            "make_flow",
            "solve",
        ),
        "swarmflow.flows.progress": ("ProgressSink",),
        "swarmflow.flows.target_repo": ("DEMO_TASK", "create_target"),
        "swarmflow.report": ("render_report", "report_from_dir"),
    },
)

__all__ = [
    "BANNER",
    "DEMO_TASK",
    "TEAM",
    "FixResult",
    "ProgressSink",
    "Review",
    "Verdict",
    "create_target",
    "demo_model",
    "make_flow",
    "render_report",
    "report_from_dir",
    "solve",
]
