"""Options for a real model on an OpenAI-compatible endpoint, shared by `demo` and `run`."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

from swarmflow.core.capabilities import FORCED_TOOL_MODES, STRUCTURED_MODES

if TYPE_CHECKING:
    from swarmflow.models import OpenAIModel
    from swarmflow.models.probe import EndpointProfile


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """`--stream`, `--force-tool-choice`, the output modes, `--pin-modes` and `--timeout`, used
    with `--model`."""
    parser.add_argument(
        "--stream", action="store_true", help="stream the model's answers (with --model)"
    )
    parser.add_argument(
        "--force-tool-choice",
        action="store_true",
        help="ask for a tool call whenever tools are offered: some local servers only call "
        "tools when forced (with --model)",
    )
    parser.add_argument(
        "--structured-mode",
        choices=STRUCTURED_MODES,
        help="how structured answers are asked for (default: from the model capability table; "
        "with --model)",
    )
    parser.add_argument(
        "--forced-tool-mode",
        choices=FORCED_TOOL_MODES,
        help="how --force-tool-choice asks for a tool call: required, named (when one tool is "
        "offered) or json_schema (an answer constrained to the tools; for servers that ignore "
        "tool_choice) (default: from the model capability table; with --model)",
    )
    parser.add_argument(
        "--pin-modes",
        action="store_true",
        help="keep the output modes: a server that rejects one fails the call instead of "
        "stepping down to a lower form (with --model)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="how long a model call's attempt may go without progress before it is retried: "
        "with --stream, the longest silence from the server, the wait for the first byte "
        "included (default 60); without, the attempt as a whole, since a plain answer shows "
        "no progress until it is complete (default 300) (with --model)",
    )


def _seconds(text: str) -> float:
    """A positive number of seconds (`inf`: no limit)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def model_from_args(args: argparse.Namespace) -> OpenAIModel:
    """The OpenAI-compatible model that `--model` and its options describe; on an endpoint of
    its own (`OPENAI_BASE_URL`), what the options leave open is taken from its probe."""
    from swarmflow.models import OpenAIModel

    chosen = {"structured": args.structured_mode, "forced_tools": args.forced_tool_mode}
    given = {k: v for k, v in chosen.items() if v is not None}
    profile = _probed(args) if len(given) < len(chosen) else None
    force = args.force_tool_choice or (profile is not None and not profile.calls_tools_unforced)
    model = OpenAIModel(
        args.model,
        stream=args.stream,
        force_tool_choice=force,
        timeout=args.timeout,
        capabilities={**(profile.capabilities() if profile else {}), **given} or None,
        pin_modes=args.pin_modes,
    )
    if profile is not None:
        model.endpoint_profile = asdict(profile)  # recorded as the run's `endpoint_probed`
    return model


def _probed(args: argparse.Namespace) -> EndpointProfile | None:
    """The endpoint's profile (from the cache, or probed now), said in one line on standard
    error; None for OpenAI's own endpoint, with `SWARMFLOW_PROBE=off`, or when it cannot be
    reached (then the run's first call says why)."""
    from swarmflow.models.probe import PROBE_ENV, ProbeFailed, probe_cached

    base_url = os.environ.get("OPENAI_BASE_URL")
    if not base_url or os.environ.get(PROBE_ENV) == "off":
        return None
    try:
        profile, cached = probe_cached(base_url, args.model, os.environ.get("OPENAI_API_KEY"))
    except ProbeFailed as exc:
        print(f"swarmflow: {exc}; the endpoint was not probed", file=sys.stderr)
        return None
    how = "as probed before" if cached else "as probed now"
    print(f"swarmflow: {profile.line()} ({how}; flags override it)", file=sys.stderr)
    if args.stream and not profile.streaming:
        print(
            "swarmflow: --stream given, but the endpoint's streamed answers failed when "
            "two came at once",
            file=sys.stderr,
        )
    return profile
