"""Ready-made flows. The flagship: parallel coders, pipelined reviewers, a stateful arbiter."""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.flows.demo import BANNER as BANNER
    from swarmflow.flows.demo import demo_model as demo_model
    from swarmflow.flows.parallel_coder_arbiter import TEAM as TEAM
    from swarmflow.flows.parallel_coder_arbiter import FixResult as FixResult
    from swarmflow.flows.parallel_coder_arbiter import Review as Review
    from swarmflow.flows.parallel_coder_arbiter import Verdict as Verdict
    from swarmflow.flows.parallel_coder_arbiter import make_flow as make_flow
    from swarmflow.flows.parallel_coder_arbiter import solve as solve
    from swarmflow.flows.progress import ProgressSink as ProgressSink
    from swarmflow.flows.target_repo import DEMO_TASK as DEMO_TASK
    from swarmflow.flows.target_repo import create_target as create_target
    from swarmflow.report import render_report as render_report
    from swarmflow.report import report_from_dir as report_from_dir

export_lazily(__name__)
