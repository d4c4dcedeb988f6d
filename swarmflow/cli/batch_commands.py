"""`swarmflow batch FLOW --inputs tasks.jsonl`: one run per task line, resumable.

FLOW is named as every command names one (`swarmflow.cli.flow_refs`). `--retry-failed` runs
the tasks that failed again (the others are kept). Exit status: 0 every task ended ok, 1 a
task failed or was left unfinished (or the `.swarm` file has diagnostics), 2 usage (a flow,
model or task list that cannot be loaded, an `--out` another batch is using), 130 interrupted
(what finished is written; run the command again to go on). Everything printed is scrubbed of
secrets, as the result lines are.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from swarmflow.cli.exit_status import OK, PROBLEMS, USAGE
from swarmflow.cli.flow_refs import add_flow_argument
from swarmflow.cli.model_choice import NO_MODEL, ChosenModel, add_model_choice, model_chosen
from swarmflow.cli.signals import stopped
from swarmflow.core.budget import Limits

if TYPE_CHECKING:
    from swarmflow.batches.outcome import BatchResult
    from swarmflow.cli.progress_talk import Counts
    from swarmflow.runtime.flow import Flow

BUDGETS = (("tokens", int, "tokens"), ("cost", float, "cost in USD"))


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `batch` to the `swarmflow` command."""
    cmd = subparsers.add_parser("batch", help="run a flow once per line of a task list")
    add_flow_argument(cmd, "flow")
    cmd.add_argument(
        "--inputs", required=True, metavar="FILE", help="a .jsonl file: one object of inputs a line"
    )
    add_out_option(cmd, "batch", "where results.jsonl and the runs go")
    cmd.add_argument(
        "--retry-failed",
        action="store_true",
        help="also run the tasks whose result in OUT/results.jsonl is failed, each resumed from "
        "its journal; the tasks that ended ok (or paused) are kept, not run again",
    )
    cmd.add_argument("--concurrency", type=int, default=8, metavar="N", help="runs at once")
    add_where_options(cmd)
    add_budget_options(cmd, "shared by every run of the batch")
    add_model_choice(
        cmd,
        model_help="a model on an OpenAI-compatible endpoint",
        demo_help="a scripted demo model: offline",
    )
    cmd.add_argument("--repo", metavar="PATH", help="the git repository worktrees branch from")
    cmd.add_argument("--fsync", action="store_true", help="fsync every result line and event")
    cmd.set_defaults(handler=batch_command)


def add_out_option(cmd: argparse.ArgumentParser, default: str, what: str) -> None:
    """`--out DIR`: the folder a call writes and, called again, goes on from."""
    cmd.add_argument(
        "--out",
        default=default,
        metavar="DIR",
        help=f"{what} (default ./{default}); run again to go on",
    )


def add_where_options(cmd: argparse.ArgumentParser) -> None:
    """`--on` (where the runs run) and `--workers` (how many Ray actors)."""
    cmd.add_argument(
        "--on",
        default="local",
        metavar="WHERE",
        help="local (default: this process), ray (the Ray cluster ray.init() finds, or a new "
        "local one) or ray://HOST:PORT; Ray needs swarmflow[ray] (docs/ray.md)",
    )
    cmd.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="with --on ray: worker actors (default: one per CPU of the cluster)",
    )


def stopped_kept(exc: KeyboardInterrupt, command: str, kept: str) -> int:
    """After Ctrl-C or SIGTERM, for a command that keeps what finished: one line saying so,
    where it is (`kept`) and how to go on; the exit status."""
    word, code = stopped(exc)
    print(f"\n{command}: {word}; {kept}, run the same command again to go on", file=sys.stderr)
    return code


def add_budget_options(cmd: argparse.ArgumentParser, shared: str) -> None:
    """`--budget-*` (the whole call's limits, `shared` as the help says) and `--run-budget-*`
    (each run's), one of each per limit."""
    for name, kind, unit in BUDGETS:
        cmd.add_argument(f"--budget-{name}", type=kind, metavar="N", help=f"{unit} {shared}")
        cmd.add_argument(
            f"--run-budget-{name}", type=kind, metavar="N", help=f"{unit} each run may spend"
        )


def batch_command(args: argparse.Namespace) -> int:
    """Load the flow, run the batch with a progress line, print the summary table."""
    import anyio

    from swarmflow.cli.flow_refs import FlowDiagnostics, load_flow_named
    from swarmflow.cli.model_choice import chosen_model
    from swarmflow.core.secrets import scrubbed

    if not model_chosen(args):
        print(f"swarmflow batch: {NO_MODEL}", file=sys.stderr)
        return USAGE
    try:
        flow = load_flow_named(args.flow)
        result = anyio.run(_batch, flow, chosen_model(args), args)
    except FlowDiagnostics as exc:
        print(str(exc), file=sys.stderr)
        return PROBLEMS
    except KeyboardInterrupt as exc:  # a ConfigError reaches the one handler of every command
        return stopped_kept(
            exc, "swarmflow batch", f"finished tasks are in {args.out}/results.jsonl"
        )
    if sys.stderr.isatty():
        print(file=sys.stderr)  # end the progress line
    print(scrubbed(result.summary()))
    return OK if result.unfinished == 0 and set(result.counts()) <= {"ok"} else PROBLEMS


async def _batch(
    flow: Flow[..., object], chosen: ChosenModel, args: argparse.Namespace
) -> BatchResult:
    from swarmflow.batches import batch
    from swarmflow.cli.progress_talk import talking

    line = ProgressLine(sys.stderr)
    options: dict[str, Any] = {
        "out": args.out,
        "concurrency": args.concurrency,
        "budget": limits_from(args, "budget"),
        "run_budget": limits_from(args, "run_budget"),
        "on_progress": line,
        "fsync": args.fsync,
        "on": args.on,
        "workers": args.workers,
        "retry_failed": args.retry_failed,
    }
    if args.repo:
        options["repo"] = args.repo
    if args.fsync:
        options["durability"] = "fsync"
    try:
        with talking(line, Path(args.out), sys.stderr):
            return await batch(flow, args.inputs, model=chosen.model, **options)
    finally:
        await chosen.close()


def limits_from(args: argparse.Namespace, prefix: str) -> Limits:
    """The limits `--PREFIX-tokens` and `--PREFIX-cost` give."""
    return Limits.coerce({name: getattr(args, f"{prefix}_{name}") for name, _, _ in BUDGETS})


class ProgressLine:
    """Redraws one status line on a terminal; elsewhere prints it at most every few seconds.
    Each warning of the batch is printed once, on a line of its own, as it comes."""

    def __init__(self, stream: TextIO, every: float = 5.0, command: str = "batch") -> None:
        self.stream = stream
        self.command = command
        """The command the warnings name (`swarmflow batch: warning: ...`)."""
        self.every = every
        self.last = 0.0
        self.tty = stream.isatty()
        self.warned = 0
        self.progress: Counts | None = None
        """The latest progress it was given (what `progress_talk` reports from)."""

    def __call__(self, progress: Counts) -> None:
        from swarmflow.core.secrets import scrubbed

        self.progress = progress

        for warning in progress.warnings[self.warned :]:
            clear = "\r\033[K" if self.tty else ""
            self.stream.write(f"{clear}swarmflow {self.command}: warning: {scrubbed(warning)}\n")
        self.warned = len(progress.warnings)
        line = progress.line()
        if self.tty:
            self.stream.write(f"\r\033[K{line}")
        elif time.monotonic() - self.last >= self.every or progress.done == progress.total:
            self.stream.write(line + "\n")
            self.last = time.monotonic()
        self.stream.flush()
