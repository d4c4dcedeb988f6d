"""`swarmflow experiment run EXP`, `swarmflow experiment grade DIR` and `swarmflow experiment
report DIR`.

EXP names an `Experiment` as every command names a flow (`file.py:NAME` or `module:NAME`).
Exit status: 0 every run finished, 1 runs were left (a budget ran out: run again to go on),
2 usage (a declaration, task set, model or folder that cannot be had), 130 interrupted (what
finished is kept; run the same command again to go on).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from swarmflow.cli.batch_commands import (
    ProgressLine,
    add_budget_options,
    add_out_option,
    add_where_options,
    limits_from,
    stopped_kept,
)
from swarmflow.cli.exit_status import OK, USAGE
from swarmflow.cli.exit_status import PROBLEMS as LEFT
from swarmflow.cli.model_choice import add_model_choice

if TYPE_CHECKING:
    from swarmflow.cli.model_choice import ChosenModel
    from swarmflow.core.messages import Model
    from swarmflow.experiments import Experiment
    from swarmflow.experiments.execution import ExperimentResult
    from swarmflow.experiments.graders import Grader
    from swarmflow.experiments.regrade import RegradeResult
    from swarmflow.runner.wiring import ModelSpec


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `experiment run`, `experiment grade` and `experiment report` to `swarmflow`."""
    cmd = subparsers.add_parser("experiment", help="run and report controlled experiments")
    sub = cmd.add_subparsers(dest="experiment_command", metavar="SUBCOMMAND")
    _run_parser(sub)
    _grade_parser(sub)
    _report_parser(sub)
    cmd.set_defaults(handler=lambda args: _no_subcommand(cmd))


def _no_subcommand(cmd: argparse.ArgumentParser) -> int:
    cmd.print_help(sys.stderr)
    return USAGE


def _run_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = sub.add_parser("run", help="run every arm x task x repeat; run again to go on")
    cmd.add_argument("experiment", metavar="EXP", help="file.py:NAME or module:NAME")
    add_out_option(cmd, "experiment", "the experiment's folder")
    add_where_options(cmd)
    cmd.add_argument("--repeats", type=int, metavar="N", help="override the declared repeats")
    cmd.add_argument(
        "--tasks",
        type=int,
        metavar="N",
        dest="first_tasks",
        help="run only the first N tasks of the set (a pilot)",
    )
    _require_sandbox_option(cmd)
    split = "split evenly over its batches (one per arm, one per best-of candidate)"
    add_budget_options(cmd, f"for the whole call, {split}")
    add_model_choice(
        cmd,
        model_help="a model on an OpenAI-compatible endpoint for every arm that names none",
        demo_help="each arm's scripted policy, offline",
    )
    cmd.set_defaults(handler=run_command)


def _folder_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str
) -> argparse.ArgumentParser:
    """`experiment NAME DIR`: a subcommand over an experiment's folder."""
    cmd: argparse.ArgumentParser = sub.add_parser(name, help=help)
    cmd.add_argument("dir", metavar="DIR", help="the experiment's folder (its --out)")
    return cmd


def _grade_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = _folder_parser(sub, "grade", "grade a finished experiment again, running no arm")
    cmd.add_argument(
        "--grader",
        metavar="REF",
        help="file.py:NAME or module:NAME: a grader (TestsGrader, FunctionGrader, "
        "RubricGrader) or an Experiment whose grader to use (default: the "
        "recorded tests grader)",
    )
    _require_sandbox_option(cmd)
    add_model_choice(
        cmd,
        model_help="the rubric judge's model, on an OpenAI-compatible endpoint",
        demo_help="the rubric judge's scripted policy (the Experiment's judge_demo)",
    )
    cmd.set_defaults(handler=grade_command)


def _report_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = _folder_parser(sub, "report", "the per-arm tables of an experiment's folder")
    cmd.add_argument("--json", action="store_true", help="the figures as one JSON object")
    cmd.add_argument("--html", metavar="FILE", help="also write a self-contained HTML page")
    cmd.set_defaults(handler=report_command)


def run_command(args: argparse.Namespace) -> int:
    import anyio

    from swarmflow.cli.model_choice import chosen_model
    from swarmflow.core.errors import ConfigError
    from swarmflow.core.secrets import scrubbed

    experiment = _declared(args)
    chosen = None if args.demo or not (args.model or args.model_object) else chosen_model(args)
    progress = ProgressLine(sys.stderr, command="experiment")
    try:
        result = anyio.run(_run, experiment, chosen, args, progress)
    except ConfigError as exc:
        print(f"swarmflow experiment run: {scrubbed(str(exc))}", file=sys.stderr)
        return USAGE
    except KeyboardInterrupt as exc:
        return stopped_kept(exc, "swarmflow experiment run", f"what finished is in {args.out}")
    if sys.stderr.isatty():
        print(file=sys.stderr)
    for why in result.stopped:
        print(f"swarmflow experiment run: {scrubbed(why)}", file=sys.stderr)
    print(
        f"{result.finished}/{result.total} runs finished and graded; "
        f"swarmflow experiment report {args.out}"
    )
    return OK if result.unfinished == 0 else LEFT


def _declared(args: argparse.Namespace) -> Experiment:
    """The declaration EXP names, with --repeats and --tasks applied."""
    from swarmflow.cli.flow_refs import described, load_python_object
    from swarmflow.core.errors import ConfigError
    from swarmflow.experiments import Experiment

    found = load_python_object(args.experiment)
    if not isinstance(found, Experiment):
        raise ConfigError(f"{args.experiment} is {described(found)}, not an Experiment")
    for name in ("repeats", "first_tasks"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ConfigError(f"--{name.replace('first_', '')} must be at least 1, got {value}")
    if args.repeats is not None:
        found = found.model_copy(update={"repeats": args.repeats})
    if args.require_sandbox:
        from swarmflow.experiments.grading_notes import sandbox_required

        found = found.model_copy(update={"grader": sandbox_required(found.grader)})
    return found


def _require_sandbox_option(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--require-sandbox",
        action="store_true",
        help="refuse to grade where the tests grader cannot run in bubblewrap "
        "(as TestsGrader(sandbox='bwrap'))",
    )


async def _run(
    experiment: Experiment,
    chosen: ChosenModel | None,
    args: argparse.Namespace,
    progress: ProgressLine,
) -> ExperimentResult:
    from swarmflow.cli.progress_talk import talking
    from swarmflow.experiments import run_experiment

    try:
        with talking(progress, Path(args.out), sys.stderr):
            return await run_experiment(
                experiment,
                out=args.out,
                model=None if chosen is None else chosen.model,
                demo=args.demo,
                on=args.on,
                workers=args.workers,
                budget=limits_from(args, "budget"),
                run_budget=limits_from(args, "run_budget"),
                on_progress=progress,
                first_tasks=args.first_tasks,
            )
    finally:
        if chosen is not None:
            await chosen.close()


def grade_command(args: argparse.Namespace) -> int:
    import anyio

    from swarmflow.core.errors import ConfigError
    from swarmflow.core.secrets import scrubbed

    grader, judge, demo = _grader_given(args.grader)
    try:
        result = anyio.run(_grade, args, grader, judge, demo)
    except ConfigError as exc:
        print(f"swarmflow experiment grade: {scrubbed(str(exc))}", file=sys.stderr)
        return USAGE
    for warning in result.warnings:
        print(f"swarmflow experiment grade: warning: {scrubbed(warning)}", file=sys.stderr)
    print(
        f"{result.graded} runs graded by {result.grader} ({result.changed} changed); "
        f"swarmflow experiment report {args.dir}"
    )
    return OK


def _grader_given(ref: str | None) -> tuple[Grader | None, ModelSpec, Callable[[], Model] | None]:
    """The grader REF names, the judge model and scripted judge an Experiment declares."""
    from swarmflow.cli.flow_refs import described, load_python_object
    from swarmflow.core.errors import ConfigError
    from swarmflow.experiments import Experiment, FunctionGrader, RubricGrader, TestsGrader

    if ref is None:
        return None, None, None
    found = load_python_object(ref)
    if isinstance(found, Experiment):
        return found.grader, found.judge_model, found.judge_demo
    if isinstance(found, TestsGrader | FunctionGrader | RubricGrader):
        return found, None, None
    raise ConfigError(f"{ref} is {described(found)}, not a grader or an Experiment")


async def _grade(
    args: argparse.Namespace,
    grader: Grader | None,
    judge: ModelSpec,
    demo: Callable[[], Model] | None,
) -> RegradeResult:
    from swarmflow.cli.model_choice import chosen_model
    from swarmflow.core.errors import ConfigError
    from swarmflow.experiments import regrade_experiment

    chosen = chosen_model(args) if args.model or args.model_object else None
    if args.demo:
        if demo is None:
            raise ConfigError("--demo needs --grader naming an Experiment with a judge_demo")
        judge = demo()
    try:
        return await regrade_experiment(
            args.dir,
            grader=grader,
            judge_model=chosen.model if chosen else judge,
            require_sandbox=args.require_sandbox,
        )
    finally:
        if chosen is not None:
            await chosen.close()


def report_command(args: argparse.Namespace) -> int:
    from swarmflow.experiments import read_experiment

    report = read_experiment(args.dir)
    if args.html:
        _write(Path(args.html), report.html())
    if args.json:
        print(json.dumps(report.json(), indent=2))
    else:
        print(report.text(), end="")
    return OK


def _write(path: Path, text: str) -> None:
    from swarmflow.core.errors import ConfigError
    from swarmflow.core.secrets import scrubbed

    try:
        path.write_text(scrubbed(text), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
