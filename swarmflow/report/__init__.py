"""Seeing a run: its report in text and HTML, its graphs, and its events as OTel spans.

Everything here reads the run's event log (or its events in memory) and nothing else.
"""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.report.digest import Digest as Digest
    from swarmflow.report.digest import agent_label as agent_label
    from swarmflow.report.digest import digest as digest
    from swarmflow.report.log import LogError as LogError
    from swarmflow.report.log import LogStream as LogStream
    from swarmflow.report.log import RunLog as RunLog
    from swarmflow.report.log import read_log as read_log
    from swarmflow.report.text import DEMO_MODEL as DEMO_MODEL
    from swarmflow.report.text import model_label as model_label
    from swarmflow.report.text import render_report as render_report
    from swarmflow.report.text import report_from_dir as report_from_dir
    from swarmflow.report.text import report_of as report_of

export_lazily(__name__)
