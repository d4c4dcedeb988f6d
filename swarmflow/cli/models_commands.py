"""`swarmflow models probe --base-url URL --model NAME`: what an endpoint honours.

Prints one line per question (structured answers, forced tool calls, tool calls unforced,
streaming with two calls at once, context length) and the line a run would print, then
caches the profile for runs (`swarmflow.models.probe`). Exit status: 0 probed, 2 the endpoint
cannot be reached (one line says why).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from swarmflow.cli.exit_status import OK, USAGE

if TYPE_CHECKING:
    from swarmflow.models.probe import EndpointProfile


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `models` command and its `probe`."""
    models = subparsers.add_parser(
        "models", help="ask a model endpoint what it honours", description=__doc__
    )
    sub = models.add_subparsers(dest="models_command", metavar="SUBCOMMAND", required=True)
    probe = sub.add_parser(
        "probe",
        help="which structured-output and tool-choice forms, streaming and context length an "
        "OpenAI-compatible endpoint honours",
        description="Ask the endpoint with small requests and print what it honours; a run "
        "with --model on that endpoint then uses it without flags (the flags override it).",
    )
    probe.add_argument(
        "--base-url",
        default=os.environ.get("OPENAI_BASE_URL"),
        help="the endpoint, with /v1 (default: $OPENAI_BASE_URL)",
    )
    probe.add_argument("--model", required=True, metavar="NAME", help="the model to ask")
    probe.set_defaults(handler=probe_command)


def probe_command(args: argparse.Namespace) -> int:
    from swarmflow.models.probe import ProbeFailed, cache_path, probe

    if not args.base_url:
        print("swarmflow models probe: give --base-url (or set OPENAI_BASE_URL)", file=sys.stderr)
        return USAGE
    key = os.environ.get("OPENAI_API_KEY")
    try:
        profile = probe(args.base_url, args.model, key)
    except ProbeFailed as exc:
        print(f"swarmflow models probe: {exc}", file=sys.stderr)
        return USAGE
    context = f"{profile.context_length:,} tokens" if profile.context_length else "not said"
    print(f"structured answers     {profile.structured}")
    print(f"forced tool calls      {profile.forced_tools}")
    print(f"tool calls unforced    {'yes' if profile.calls_tools_unforced else 'no: forced'}")
    print(f"streaming, two at once {'works' if profile.streaming else 'fails: not streamed'}")
    print(f"context length         {context}")
    for note in profile.notes:
        print(f"  - {note}")
    _store(profile)
    print(f"a run uses: {profile.line()} (cached in {cache_path()})")
    return OK


def _store(profile: EndpointProfile) -> None:
    """Put the fresh profile in the cache, replacing what an earlier probe left there."""
    from dataclasses import asdict

    from swarmflow.models.probe import cache_path, read_cache, write_cache

    known = read_cache(cache_path())
    known[f"{profile.base_url} {profile.model}"] = asdict(profile)
    write_cache(cache_path(), known)
