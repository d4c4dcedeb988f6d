"""`swarmflow resume`, `swarmflow runs` and `swarmflow clean`: run directories after the fact."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarmflow.cli.exit_status import OK, PROBLEMS, USAGE
from swarmflow.cli.flow_refs import load_flow_named
from swarmflow.cli.model_choice import ChosenModel, add_model_choice

if TYPE_CHECKING:
    from swarmflow.runner.result import RunResult
    from swarmflow.runtime.flow import Flow


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    resume = subparsers.add_parser(
        "resume",
        help="go on with a killed, failed or paused run: finished calls are replayed, not paid",
    )
    resume.add_argument("run_dir", metavar="RUN_DIR")
    resume.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="TOKEN=VALUE",
        help="the answer to the question the run paused at, by the token it printed",
    )
    resume.add_argument(
        "--strict", action="store_true", help="refuse when the flow no longer matches the journal"
    )
    add_model_choice(
        resume,
        model_help="a model on an OpenAI-compatible endpoint, with the endpoint options as for "
        "run (default: the run's own, when run.json records its name)",
        demo_help="play the model with the demo policy",
    )
    resume.add_argument("--repo", metavar="PATH", help="the repository (default: the run's own)")
    resume.add_argument(
        "--durability",
        choices=("write", "fsync"),
        default="write",
        help="fsync: every event and record also survives a power cut",
    )
    resume.set_defaults(handler=resume_command)

    runs = subparsers.add_parser("runs", help="list runs with their status, cost and age")
    runs.add_argument("root", nargs="?", metavar="RUNS", help="the runs folder (default: runs)")
    runs.set_defaults(handler=runs_command)

    clean = subparsers.add_parser(
        "clean", help="remove the worktrees and branches a run that is over left behind"
    )
    clean.add_argument("run_dir", metavar="RUN_DIR")
    clean.set_defaults(handler=clean_command)


# -- resume -----------------------------------------------------------------------------------


def resume_command(args: argparse.Namespace) -> int:
    """Load the run's flow again and resume it; 0 when it then ends ok."""
    import anyio

    from swarmflow.cli.run_commands import parse_answers
    from swarmflow.core.errors import ConfigError
    from swarmflow.durable.interrupted import open_interrupted

    try:
        answers = parse_answers(args.answer)
        interrupted = open_interrupted(args.run_dir)
        flow = load_flow_reference(str(interrupted.manifest.get("flow") or ""), args.run_dir)
        model = _model(args, interrupted.manifest)
    except (ValueError, ConfigError) as exc:
        print(f"swarmflow resume: {exc}", file=sys.stderr)
        return USAGE
    options = {
        "resume": interrupted.run_dir,
        "strict": args.strict,
        "durability": args.durability,
        "repo": args.repo or interrupted.manifest.get("repo"),
        "human": _channel(answers, args.demo),
        "raise_on_failure": False,  # a failed run is reported, not a traceback
    }
    result = anyio.run(_resume, flow, options, model)
    return report_resumed(result)


def _model(args: argparse.Namespace, manifest: Mapping[str, object]) -> ChosenModel:
    """The model the options name, else the one `run.json` records by name."""
    from swarmflow.cli.model_choice import chosen_model, model_chosen
    from swarmflow.core.errors import ConfigError

    if not model_chosen(args):
        args.model = manifest.get("model")
    if not model_chosen(args):
        raise ConfigError(
            "the run's model is not recorded by name (it was a model object, or an endpoint "
            "model given with its options); give it again: --model NAME, --model-object "
            "file.py:NAME, or --demo"
        )
    return chosen_model(args)


def _channel(answers: dict[str, Any], demo: bool) -> Any:
    from swarmflow.channels import DeferredHuman, ScriptedHuman

    if demo and not answers:
        return ScriptedHuman(lambda question, payload: payload if payload is not None else "yes")
    return DeferredHuman(answers)


async def _resume(
    flow: Flow[..., object], options: dict[str, Any], chosen: ChosenModel
) -> RunResult:
    from swarmflow import run

    try:
        return await run(flow, model=chosen.model, **options)
    finally:
        await chosen.close()


def load_flow_reference(reference: str, run_dir: str) -> Flow[..., object]:
    """The flow a manifest names: a `.swarm` file, `file.py:name` or `module:name`."""
    from swarmflow.core.errors import ConfigError

    if not reference:
        raise ConfigError(f"{run_dir} records no flow to load (no run.json)")
    try:
        return load_flow_named(reference)
    except ConfigError as exc:
        raise ConfigError(f"cannot load the run's flow: {exc}") from None


def report_resumed(result: RunResult) -> int:
    """What the resumed run did: status, replayed calls, where the flow diverged."""
    events = _this_process(result.events if result.events_path.exists() else [])
    replayed = sum(1 for e in events if e.type == "call_replayed")
    diverged = [e for e in events if e.type == "resume_diverged"]
    print(f"status: {result.status}")
    print(f"replayed: {replayed} finished calls (0 tokens)")
    for event in diverged:
        print(
            f"diverged: call {event.index} of branch {event.branch or '(root)'} "
            f"(agent {event.agent}) sends something new; it and what follows ran again"
        )
    if result.error is not None:
        print(f"error: {type(result.error).__name__}: {result.error}")
    print(f"output: {_show(result.output)}")
    print(
        f"tokens: {result.tokens} in this process, {result.total_tokens} in the whole run  "
        f"cost: ${result.cost:.4f} (${result.total_cost:.4f} in all)  run: {result.run_id}"
    )
    print(f"events: {result.events_path}")
    return OK if result.status == "ok" else PROBLEMS


def _this_process(events: list[Any]) -> list[Any]:
    """The events from this process's resume on (the log holds the earlier processes' too)."""
    starts = [i for i, e in enumerate(events) if e.type == "run_resumed"]
    return events[starts[-1] :] if starts else events


def _show(value: object) -> str:
    dump = getattr(value, "model_dump_json", None)
    return str(dump()) if dump is not None else str(value)


# -- runs and clean ---------------------------------------------------------------------------


def runs_command(args: argparse.Namespace) -> int:
    """One line per run directory: id, status, cost, age, flow; one line on stderr for each
    run directory that does not read back (then the exit status is 2)."""
    from swarmflow.durable.listing import list_runs
    from swarmflow.record.runs_root import resolve_runs_root

    root = resolve_runs_root(args.root)
    if args.root and not root.is_dir():
        print(f"swarmflow runs: {args.root} is not a folder of runs", file=sys.stderr)
        return USAGE
    rows, bad = list_runs(root)
    for problem in bad:
        print(f"swarmflow runs: {problem}", file=sys.stderr)
    if not rows:
        print(f"no {'readable ' if bad else ''}runs in {root}")
        return USAGE if bad else OK
    now = time.time()
    print(f"{'RUN':<28} {'STATUS':<9} {'TOKENS':>9} {'COST':>9} {'AGE':>6}  FLOW")
    for row in rows:
        age = _age(now - row.log.last) if row.log.last else "-"
        print(
            f"{row.run_id:<28} {row.status:<9} {row.log.spent.tokens:>9} "
            f"{'$' + format(row.log.spent.cost, '.4f'):>9} {age:>6}  {row.log.flow}"
        )
    return USAGE if bad else OK


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def clean_command(args: argparse.Namespace) -> int:
    """Remove a run's leftover worktrees and branches; refuses a run that may still be live."""
    import anyio

    from swarmflow.core.errors import ConfigError, WorkspaceError
    from swarmflow.durable.listing import dead_run
    from swarmflow.workspaces.leftovers import remove_leftovers

    try:
        run_dir, repo = dead_run(Path(args.run_dir))
        removed = [] if repo is None else anyio.run(remove_leftovers, repo, run_dir)
    except (ConfigError, WorkspaceError) as exc:
        print(f"swarmflow clean: {exc}", file=sys.stderr)
        return PROBLEMS
    for line in removed:
        print(f"removed {line}")
    print(f"clean: {len(removed)} worktrees and branches removed")
    return OK
