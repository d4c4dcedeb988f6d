"""`swarmflow run`: run a `.swarm` flow from the command line.

Exit status: 0 a run that ended ok, 1 diagnostics or a run that did not (a paused run
included: it has not ended), 2 usage.
The DSL package is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from swarmflow.cli.model_options import add_model_options, model_from_args
from swarmflow.core.secrets import scrubbed

OK, PROBLEMS, USAGE = 0, 1, 2
INTERRUPTED = 130
CAPS = (
    ("tokens", int, "tokens"),
    ("cost", float, "cost in USD"),
    ("calls", int, "model calls"),
    ("seconds", float, "wall-clock seconds"),
)


def register(subparsers: Any) -> None:
    """Add `run` to the `swarmflow` command."""
    run = subparsers.add_parser("run", help="run a .swarm flow")
    run.add_argument("file", metavar="FILE")
    run.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a flow input; repeat for each one",
    )
    chosen = run.add_mutually_exclusive_group()
    chosen.add_argument(
        "--model",
        metavar="NAME",
        help="a model on an OpenAI-compatible endpoint (OPENAI_BASE_URL, OPENAI_API_KEY)",
    )
    chosen.add_argument(
        "--demo", action="store_true", help="use a scripted demo model: offline, instant"
    )
    for cap, kind, unit in CAPS:
        run.add_argument(
            f"--budget-{cap}",
            type=kind,
            metavar="N",
            help=f"cap the run's {unit}; it can only lower the flow's own budget",
        )
    run.add_argument("--repo", metavar="PATH", help="the git repository worktrees branch from")
    add_model_options(run)
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

    from swarmflow.dsl import DslError, load_flow

    if not args.demo and not args.model:
        print(
            "swarmflow run: choose a model with --model NAME, or --demo to run offline",
            file=sys.stderr,
        )
        return USAGE
    if args.answer:
        print(
            "swarmflow run: an answer belongs to the paused run that asked; give it with "
            "swarmflow resume RUN_DIR --answer TOKEN=VALUE",
            file=sys.stderr,
        )
        return USAGE
    try:
        inputs = _typed_inputs(args)
    except ValueError as exc:
        print(f"swarmflow run: {exc}", file=sys.stderr)
        return USAGE
    try:
        flow = load_flow(args.file)
    except DslError as exc:
        print(str(exc), file=sys.stderr)
        return PROBLEMS
    except OSError as exc:
        print(f"swarmflow: cannot read {args.file}: {exc}", file=sys.stderr)
        return USAGE
    missing = _missing_inputs(flow, inputs)
    if missing:
        print(f"swarmflow run: {missing}", file=sys.stderr)
        return USAGE
    try:
        result = anyio.run(_run, flow, inputs, args)
    except KeyboardInterrupt:
        print("swarmflow run: interrupted; the run was stopped", file=sys.stderr)
        return INTERRUPTED
    return _report(result, as_json=args.json)


def _typed_inputs(args: argparse.Namespace) -> dict[str, Any]:
    from swarmflow.dsl import compile_source

    raw = parse_inputs(args.input)
    try:
        source = Path(args.file).read_text(encoding="utf-8")
        program = compile_source(source, args.file, base_dir=str(Path(args.file).parent))
    except Exception:  # load_flow reports file and syntax problems with their places
        return dict(raw)
    from swarmflow.dsl.compile.to_flow import convert_input

    params = {p.name: p for p in program.params}
    unknown = sorted(set(raw) - set(params))
    if unknown:
        raise ValueError(
            f"flow {program.name} has no input {', '.join(unknown)}; its inputs: "
            f"{', '.join(params) or 'none'}"
        )
    return {k: convert_input(params[k], v) for k, v in raw.items()}


def _missing_inputs(flow: Any, inputs: dict[str, Any]) -> str:
    try:
        flow.signature.bind(**inputs)
    except TypeError as exc:
        return f"inputs do not fit flow {flow.name}{flow.signature}: {exc}"
    return ""


async def _run(flow: Any, inputs: dict[str, Any], args: argparse.Namespace) -> Any:
    from swarmflow import run
    from swarmflow.flows.progress import ProgressSink

    options: dict[str, Any] = {"sinks": [ProgressSink()]}  # the demo's live view, on stderr
    if args.demo:
        from swarmflow.flows.offline_model import offline_model

        options["model"] = offline_model()
        options["human"] = _approve
    if args.defer:
        from swarmflow.channels import DeferredHuman

        options["human"] = DeferredHuman()
    options["budget"] = lowered_budget(flow.limits, args)
    options["raise_on_failure"] = False  # a failed run is reported, not a traceback
    if args.repo:
        options["repo"] = args.repo
    if args.board_port is not None:
        from swarmflow.cli.board_commands import BoardAnnouncer

        options["board_port"] = args.board_port
        options["sinks"].append(BoardAnnouncer())
    if args.demo:
        return await run(flow, **options, **inputs)
    async with model_from_args(args) as model:  # our own client: closed when the run ends
        return await run(flow, model=model, **options, **inputs)


def lowered_budget(declared: Any, args: argparse.Namespace) -> dict[str, float]:
    """The flow's budget with each `--budget-*` cap applied; a cap never raises a limit."""
    budget: dict[str, float] = {}
    for cap, _, _ in CAPS:
        given, own = getattr(args, f"budget_{cap}"), getattr(declared, cap)
        if given is not None:
            budget[cap] = given if own is None else min(given, own)
    return budget


def parse_answers(pairs: list[str]) -> dict[str, Any]:
    """`TOKEN=VALUE` pairs; a value that parses as JSON is taken as JSON, else as text."""
    import json

    answers: dict[str, Any] = {}
    for pair in pairs:
        token, sep, value = pair.partition("=")
        if not sep or not token:
            raise ValueError(f"--answer {pair!r}: expected TOKEN=VALUE")
        try:
            answers[token] = json.loads(value)
        except json.JSONDecodeError:
            answers[token] = value
    return answers


def _approve(question: str, payload: Any) -> Any:
    """The demo's person: approves whatever is asked, answering with the payload."""
    return payload if payload is not None else "yes"


def _report(result: Any, *, as_json: bool = False) -> int:
    # the model may have echoed a secret: the one policy
    print(scrubbed(_report_json(result) if as_json else _report_text(result)))
    return OK if result.status == "ok" else PROBLEMS


def _report_text(result: Any) -> str:
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


def _report_json(result: Any) -> str:
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
