"""`swarmflow batch FLOW --inputs tasks.jsonl`: one run per task line, resumable.

Exit status: 0 every task ended ok, 1 a task failed or was left unfinished (or the flow cannot
be loaded), 2 usage, 130 interrupted (what finished is written; run the command again to go on).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

from swarmflow.cli.flow_refs import load_flow_named
from swarmflow.cli.model_options import add_model_options, model_from_args

OK, PROBLEMS, USAGE = 0, 1, 2
INTERRUPTED = 130
BUDGETS = (("tokens", int, "tokens"), ("cost", float, "cost in USD"))


def register(subparsers: Any) -> None:
    """Add `batch` to the `swarmflow` command."""
    cmd = subparsers.add_parser("batch", help="run a flow once per line of a task list")
    cmd.add_argument("flow", metavar="FLOW", help="a .swarm file, module:flow or file.py:flow")
    cmd.add_argument(
        "--inputs", required=True, metavar="FILE", help="a .jsonl file: one object of inputs a line"
    )
    cmd.add_argument(
        "--out", default="batch", metavar="DIR",
        help="where results.jsonl and the runs go (default ./batch); run again to go on",
    )  # fmt: skip
    cmd.add_argument("--concurrency", type=int, default=8, metavar="N", help="runs at once")
    cmd.add_argument(
        "--on", default="local", metavar="WHERE",
        help="local (default: this process), ray (the Ray cluster ray.init() finds, or a new "
        "local one) or ray://HOST:PORT; Ray needs swarmflow[ray] (docs/ray.md)",
    )  # fmt: skip
    cmd.add_argument(
        "--workers", type=int, metavar="N",
        help="with --on ray: worker actors (default: one per CPU of the cluster)",
    )  # fmt: skip
    for name, kind, unit in BUDGETS:
        cmd.add_argument(f"--budget-{name}", type=kind, metavar="N",
                         help=f"{unit} shared by every run of the batch")  # fmt: skip
        cmd.add_argument(f"--task-budget-{name}", type=kind, metavar="N",
                         help=f"{unit} each run may spend")  # fmt: skip
    chosen = cmd.add_mutually_exclusive_group()
    chosen.add_argument("--model", metavar="NAME", help="a model on an OpenAI-compatible endpoint")
    chosen.add_argument("--demo", action="store_true", help="a scripted demo model: offline")
    cmd.add_argument("--repo", metavar="PATH", help="the git repository worktrees branch from")
    cmd.add_argument("--fsync", action="store_true", help="fsync every result line and event")
    add_model_options(cmd)
    cmd.set_defaults(handler=batch_command)


def batch_command(args: argparse.Namespace) -> int:
    """Load the flow, run the batch with a progress line, print the summary table."""
    import anyio

    from swarmflow.core.errors import ConfigError

    if not args.demo and not args.model:
        print("swarmflow batch: choose --model NAME, or --demo to run offline", file=sys.stderr)
        return USAGE
    try:
        flow = load_flow_named(args.flow)
        result = anyio.run(_batch, flow, args)
    except ConfigError as exc:
        print(f"swarmflow batch: {exc}", file=sys.stderr)
        return PROBLEMS
    except KeyboardInterrupt:
        print(
            f"\nswarmflow batch: interrupted; finished tasks are in {args.out}/results.jsonl, "
            "run the same command again to go on",
            file=sys.stderr,
        )
        return INTERRUPTED
    if sys.stderr.isatty():
        print(file=sys.stderr)  # end the progress line
    print(result.summary())
    return OK if result.unfinished == 0 and set(result.counts()) <= {"ok"} else PROBLEMS


async def _batch(flow: Any, args: argparse.Namespace) -> Any:
    from swarmflow.batches import batch

    options: dict[str, Any] = {
        "out": args.out,
        "concurrency": args.concurrency,
        "budget": _limits(args, "budget"),
        "task_budget": _limits(args, "task_budget"),
        "on_progress": ProgressLine(sys.stderr),
        "fsync": args.fsync,
        "on": args.on,
        "workers": args.workers,
    }
    if args.repo:
        options["repo"] = args.repo
    if args.fsync:
        options["durability"] = "fsync"
    if args.demo:
        from swarmflow.flows.offline_model import offline_model

        return await batch(flow, args.inputs, model=offline_model(), **options)
    async with model_from_args(args) as model:
        return await batch(flow, args.inputs, model=model, **options)


def _limits(args: argparse.Namespace, prefix: str) -> dict[str, float]:
    chosen = {name: getattr(args, f"{prefix}_{name}") for name, _, _ in BUDGETS}
    return {name: value for name, value in chosen.items() if value is not None}


class ProgressLine:
    """Redraws one status line on a terminal; elsewhere prints it at most every few seconds."""

    def __init__(self, stream: TextIO, every: float = 5.0) -> None:
        self.stream = stream
        self.every = every
        self.last = 0.0
        self.tty = stream.isatty()

    def __call__(self, progress: Any) -> None:
        line = progress.line()
        if self.tty:
            self.stream.write(f"\r\033[K{line}")
        elif time.monotonic() - self.last >= self.every or progress.done == progress.total:
            self.stream.write(line + "\n")
            self.last = time.monotonic()
        self.stream.flush()
