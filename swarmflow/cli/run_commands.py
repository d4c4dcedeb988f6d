"""`swarmflow run FLOW`: run a flow from the command line, a `.swarm` file or a Python flow.

FLOW is named as every command names one (`swarmflow.cli.flow_refs`): `file.swarm`,
`file.py:flow` or `module:flow`. Exit status: 0 a run that ended ok, 1 diagnostics or a run
that did not (a paused run included: it has not ended), 2 usage.
The DSL package is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TypeVar

from swarmflow.cli.exit_status import OK, PROBLEMS, USAGE
from swarmflow.cli.flow_refs import add_flow_argument
from swarmflow.cli.model_choice import NO_MODEL, ChosenModel, add_model_choice, model_chosen
from swarmflow.cli.signals import cancelled_on_sigterm, stopped
from swarmflow.core.secrets import scrubbed

if TYPE_CHECKING:
    from pydantic import JsonValue

    from swarmflow.core.budget import Limits
    from swarmflow.runner.result import RunResult
    from swarmflow.runtime.flow import Flow

T = TypeVar("T")

CAPS = (
    ("tokens", int, "tokens"),
    ("cost", float, "cost in USD"),
    ("calls", int, "model calls"),
    ("seconds", float, "wall-clock seconds"),
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `run` to the `swarmflow` command."""
    run = subparsers.add_parser("run", help="run a flow: a .swarm file or a Python flow")
    add_flow_argument(run, "file")
    run.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a flow input; repeat for each one",
    )
    add_model_choice(
        run,
        model_help="a model on an OpenAI-compatible endpoint (OPENAI_BASE_URL, OPENAI_API_KEY)",
        demo_help="use a scripted demo model: offline, instant",
    )
    for cap, kind, unit in CAPS:
        run.add_argument(
            f"--budget-{cap}",
            type=kind,
            metavar="N",
            help=f"cap the run's {unit}; it can only lower the flow's own budget",
        )
    run.add_argument("--repo", metavar="PATH", help="the git repository worktrees branch from")
    run.add_argument(
        "--defer",
        action="store_true",
        help="pause the run at a question for a person and print its resume token",
    )
    run.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="TOKEN=VALUE",
        help="refused here: answers go to the paused run, with "
        "`swarmflow resume RUN_DIR --answer TOKEN=VALUE`",
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="print the result as one JSON object (status, output, tokens, cost, run, events)",
    )
    run.add_argument(
        "--board-port",
        type=int,
        metavar="PORT",
        help="serve the run's message board on 127.0.0.1:PORT while it runs (0: pick one); "
        "prints the URL and token",
    )
    run.add_argument(
        "--experience",
        nargs="?",
        const=True,
        metavar="STORE",
        help="offer the agents notes from earlier runs and write this run's at its end "
        "(STORE: an SQLite file; default: experience.db in the runs root)",
    )
    run.set_defaults(handler=run_command)


def parse_inputs(pairs: list[str]) -> dict[str, str]:
    """`["task=fix it", "n=3"]` as a mapping; ValueError names a malformed pair."""
    inputs: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--input {pair!r} is not KEY=VALUE")
        inputs[key.strip()] = value
    return inputs


def run_command(args: argparse.Namespace) -> int:
    """Load, run, and report; 0 when the run ended ok."""
    import anyio

    from swarmflow.cli.flow_refs import FlowDiagnostics, load_flow_named
    from swarmflow.cli.model_choice import chosen_model
    from swarmflow.core.errors import ConfigError

    if not model_chosen(args):
        return _usage(NO_MODEL)
    if args.answer:
        return _usage(
            "an answer belongs to the paused run that asked; give it with "
            "swarmflow resume RUN_DIR --answer TOKEN=VALUE"
        )
    try:
        raw = parse_inputs(args.input)
        flow = load_flow_named(args.file)
        inputs = _inputs(flow, raw)
        model = chosen_model(args)
        _check_experience(args.experience)
    except FlowDiagnostics as exc:
        print(str(exc), file=sys.stderr)
        return PROBLEMS
    except (ValueError, ConfigError) as exc:
        return _usage(str(exc))
    try:
        result = anyio.run(_run, flow, inputs, args, model)
    except KeyboardInterrupt as exc:
        word, code = stopped(exc)
        print(f"swarmflow run: {word}; the run was stopped", file=sys.stderr)
        return code
    return _report(result, as_json=args.json)


def _check_experience(option: object) -> None:
    """Open the experience store `--experience` names, so that a bad one is one line here
    rather than an error from inside the running flow's task group."""
    if option is None:
        return
    from swarmflow.experience.run_notes import open_store
    from swarmflow.record.runs_root import resolve_runs_root

    open_store(option, resolve_runs_root(None))


def _usage(problem: str) -> int:
    print(f"swarmflow run: {problem}", file=sys.stderr)
    return USAGE


def _inputs(flow: Flow[..., object], raw: dict[str, str]) -> dict[str, Any]:
    """The inputs typed for the flow; ValueError names one it lacks or does not take."""
    from swarmflow.cli.flow_inputs import typed_inputs

    inputs = typed_inputs(flow, raw)
    try:
        flow.signature.bind(**inputs)
    except TypeError as exc:
        raise ValueError(f"inputs do not fit flow {flow.name}{flow.signature}: {exc}") from None
    return inputs


async def _run(
    flow: Flow[..., object], inputs: dict[str, Any], args: argparse.Namespace, chosen: ChosenModel
) -> RunResult:
    from swarmflow import run
    from swarmflow.flows.progress import ProgressSink

    options: dict[str, Any] = {"sinks": [ProgressSink()]}  # the demo's live view, on stderr
    if args.demo:
        options["human"] = _approve
    if args.defer:
        from swarmflow.channels import DeferredHuman

        options["human"] = DeferredHuman()
    options["budget"] = lowered_budget(flow.limits, args)
    options["raise_on_failure"] = False  # a failed run is reported, not a traceback
    if args.repo:
        options["repo"] = args.repo
    if args.experience is not None:
        options["experience"] = args.experience
    if args.board_port is not None:
        from swarmflow.cli.board_commands import BoardAnnouncer

        options["board_port"] = args.board_port
        options["sinks"].append(BoardAnnouncer())
    try:
        return await cancelled_on_sigterm(
            lambda: run(flow, model=chosen.model, **options, **inputs)
        )
    finally:
        await chosen.close()  # a client made here: its connections close with the run


def lowered_budget(declared: Limits, args: argparse.Namespace) -> dict[str, float]:
    """The flow's budget with each `--budget-*` cap applied; a cap never raises a limit."""
    budget: dict[str, float] = {}
    for cap, _, _ in CAPS:
        given, own = getattr(args, f"budget_{cap}"), getattr(declared, cap)
        if given is not None:
            budget[cap] = given if own is None else min(given, own)
    return budget


def parse_answers(pairs: list[str]) -> dict[str, JsonValue]:
    """`TOKEN=VALUE` pairs; a value that parses as JSON is taken as JSON, else as text."""
    import json

    answers: dict[str, JsonValue] = {}
    for pair in pairs:
        token, sep, value = pair.partition("=")
        if not sep or not token:
            raise ValueError(f"--answer {pair!r}: expected TOKEN=VALUE")
        try:
            answers[token] = json.loads(value)
        except json.JSONDecodeError:
            answers[token] = value
    return answers


def _approve(question: str, payload: T) -> T | str:
    """The demo's person: approves whatever is asked, answering with the payload."""
    return payload if payload is not None else "yes"


def _report(result: RunResult, *, as_json: bool = False) -> int:
    # the model may have echoed a secret: the one policy
    print(scrubbed(_report_json(result) if as_json else _report_text(result)))
    return OK if result.status == "ok" else PROBLEMS


def _report_text(result: RunResult) -> str:
    from swarmflow.cli.output_view import as_text
    from swarmflow.runner.failures import flow_line

    lines = [f"status: {result.status}"]
    if result.error is not None:
        lines.append(f"error: {type(result.error).__name__}: {result.error}")
        where = flow_line(result.error) if result.status == "failed" else None
        if where is not None:
            lines.append(f"  at {where}")
    if result.pause_token:
        lines.append(f"paused: answer token {result.pause_token}")
        lines.append(
            f"resume: swarmflow resume {result.run_dir} --answer {result.pause_token}=VALUE"
        )
    if result.status != "paused":
        shown = as_text(result.output)
        lines.append(f"output:\n{_indent(shown)}" if "\n" in shown else f"output: {shown}")
    lines.append(f"tokens: {result.tokens}  cost: ${result.cost:.4f}  run: {result.run_id}")
    lines.append(f"events: {result.events_path}")
    return "\n".join(lines)


def _report_json(result: RunResult) -> str:
    import json

    from swarmflow.cli.output_view import plain

    failed = result.error is not None
    report = {
        "status": result.status,
        "output": plain(result.output),
        "error": f"{type(result.error).__name__}: {result.error}" if failed else None,
        "pause_token": result.pause_token or None,
        "tokens": result.tokens,
        "cost": result.cost,
        "run_id": result.run_id,
        "run_dir": str(result.run_dir),
        "events": str(result.events_path),
    }
    return json.dumps(report, ensure_ascii=False)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())
