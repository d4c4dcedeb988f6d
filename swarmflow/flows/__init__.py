"""Ready-made flows. The flagship: parallel coders, pipelined reviewers, a stateful arbiter."""

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
