"""`swarmflow demo`, run: the target repository, the model, the human channel and the report."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import anyio

from swarmflow.cli.exit_status import USAGE
from swarmflow.cli.model_options import model_from_args
from swarmflow.cli.report_commands import tolerant_output
from swarmflow.cli.signals import stopped
from swarmflow.core.errors import ConfigError, FlowFailed, SwarmflowError
from swarmflow.core.ids import new_run_id
from swarmflow.core.messages import Model
from swarmflow.core.ports import HumanChannel
from swarmflow.core.secrets import scrubbed
from swarmflow.flows.demo import BANNER, demo_model
from swarmflow.flows.parallel_coder_arbiter import solve
from swarmflow.flows.progress import ProgressSink
from swarmflow.flows.target_repo import DEMO_TASK, create_target
from swarmflow.operators.human_channels import ConsoleHuman, ScriptedHuman
from swarmflow.record.runs_root import resolve_runs_root
from swarmflow.report import render_report
from swarmflow.runner.lifecycle import RunResult
from swarmflow.workspaces.git import git_succeeds


def run_demo(args: argparse.Namespace) -> int:
    """Run the flagship flow and print its summary; 0 when the run finished ok."""
    tolerant_output()
    problem = _usage_problem(args)
    if problem:
        print(f"swarmflow demo: {problem}", file=sys.stderr)
        return USAGE
    try:
        result: RunResult = anyio.run(_demo, args)
    except KeyboardInterrupt as exc:
        word, code = stopped(exc)
        print(f"\nswarmflow demo: {word}", file=sys.stderr)
        return code
    except FlowFailed as failed:  # the report still shows what the run did
        result = failed.result
    except SwarmflowError as exc:
        print(scrubbed(f"swarmflow demo: {exc}"), file=sys.stderr)
        return 1
    print(scrubbed(render_report(result.events, result.run_dir)), end="")
    if args.keep:
        print(f"worktrees kept in {result.run_dir / 'worktrees'}")
    if result.error is not None:
        print(scrubbed(f"swarmflow demo: the run failed: {result.error}"), file=sys.stderr)
    print(_next_step(result.run_dir), file=sys.stderr)
    return 0 if result.status == "ok" else 1


def _next_step(run_dir: Path) -> str:
    """What to do next: see the run (and every other) in the browser, or its report page."""
    return (
        f"next: swarmflow view {run_dir.parent}  (every run, live: timeline, transcripts), or "
        f"swarmflow report {run_dir} --html"
    )


def _usage_problem(args: argparse.Namespace) -> str:
    """Why these options cannot work together, or ''."""
    if args.model is None and (args.repo is not None or args.task is not None):
        return (
            "--repo and --task need --model: the scripted demo policy only knows how to "
            "fix the built-in demo repository"
        )
    if args.model and not (os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_KEY")):
        return "--model needs an endpoint: set OPENAI_BASE_URL (and OPENAI_API_KEY if it wants one)"
    if args.coders < 1:
        return "--coders must be at least 1"
    if not 0.0 <= args.threshold <= 1.0:
        return "--threshold must be between 0 and 1"
    return ""


async def _demo(args: argparse.Namespace) -> RunResult:
    """Prepare the target, model and human channel, then run the flow."""
    runs_root = Path(await anyio.Path(resolve_runs_root(args.runs_dir)).absolute())
    run_id = new_run_id()
    target = await _target(args.repo, runs_root / run_id)
    human = _human(args.human)
    _say(BANNER if args.model is None else f"model: {args.model} at {_endpoint()}")
    _say(f"target: {target}{'' if args.repo else ' (a fresh demo repository)'}")
    note = " (approves the arbiter's pick)" if human.name == "auto" else ""
    _say(f"human: {human.name}{note}")
    if args.model is None:
        return await _solve(args, target, runs_root / run_id, human, demo_model())
    # Our own client, so its connections are closed when the run is over.
    async with model_from_args(args) as model:
        return await _solve(args, target, runs_root / run_id, human, model)


async def _solve(
    args: argparse.Namespace, target: Path, run_dir: Path, human: HumanChannel, model: Model
) -> RunResult:
    """Run the flow with live progress on standard error, in `run_dir`."""
    return await solve(
        target,
        args.task or DEMO_TASK,
        model=model,
        human=human,
        sinks=[ProgressSink()],
        runs_root=run_dir.parent,
        run_id=run_dir.name,
        keep=args.keep,
        threshold=args.threshold,
        max_coders=args.coders,
        test_command=args.test_command,
        feedback=getattr(args, "feedback", "off") == "lsp",
    )


async def _target(repo: Path | None, run_dir: Path) -> Path:
    """The given repository (checked), or a fresh demo repository in the run directory."""
    if repo is None:
        return await create_target(run_dir / "target")
    path = Path(await anyio.Path(repo).resolve())
    has_commit = await anyio.Path(path).is_dir() and await git_succeeds(
        path, "rev-parse", "--verify", "HEAD^{commit}"
    )
    if not has_commit:
        raise ConfigError(f"--repo {repo}: not a git repository with at least one commit")
    return path


def _human(kind: str | None) -> HumanChannel:
    """The human channel: the terminal, or a scripted approval so CI never blocks."""
    if kind is None:
        kind = "console" if sys.stdin.isatty() else "auto"
    if kind == "console":
        return ConsoleHuman()
    channel = ScriptedHuman(lambda question, payload: "y", who="auto-approve")
    channel.name = "auto"
    return channel


def _endpoint() -> str:
    """The model endpoint, as the OpenAI-compatible adapter will find it."""
    return os.environ.get("OPENAI_BASE_URL") or "the default OpenAI endpoint"


def _say(text: str) -> None:
    """A line of the run's preamble, flushed so it precedes the progress on stderr."""
    print(text, flush=True)
