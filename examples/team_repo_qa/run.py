"""Run the repository Q&A team: `python examples/team_repo_qa/run.py --repo PATH "question"`.

Offline by default, with the scripted policy of `qa_scripted.py` (no LLM, labelled as such in the
output). With `--model NAME` every agent uses that model on any OpenAI-compatible endpoint
(`--base-url`, or OPENAI_BASE_URL; the key from OPENAI_API_KEY).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from qa_flow import repo_qa
from qa_scripted import MODEL_NAME, scripted_model

from swarmflow import RunResult, run_sync
from swarmflow.report.text import render_report

DEFAULT_QUESTION = "What does this repository do, and where is it tested?"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="?", default=DEFAULT_QUESTION)
    parser.add_argument("--repo", default=".", help="the repository to answer about")
    parser.add_argument("--listen", choices=["passive", "blocking"], default="passive")
    parser.add_argument("--model", help="a model name on an OpenAI-compatible endpoint")
    parser.add_argument("--base-url", help="the endpoint (default: OPENAI_BASE_URL)")
    parser.add_argument("--report", action="store_true", help="print the run's full report")
    return parser.parse_args(argv)


def model_of(args: argparse.Namespace) -> Any:
    """The scripted policy, or the model's name: the run builds (and closes) its client."""
    if args.model is None:
        return scripted_model(args.listen)
    if args.base_url:
        os.environ["OPENAI_BASE_URL"] = args.base_url
    return args.model


def main(argv: list[str] | None = None, **run_options: Any) -> RunResult:
    args = parse(argv)
    label = (
        f"{args.model} on an OpenAI-compatible endpoint"
        if args.model
        else (f"{MODEL_NAME} (scripted policy, no LLM)")
    )
    print(f"model: {label}; listening: {args.listen}")
    result = run_sync(repo_qa, model=model_of(args), repo=Path(args.repo).resolve(),
                      question=args.question, listen=args.listen, **run_options)  # fmt: skip
    print(result.output)
    if args.report:
        print(render_report(result.events, result.events_path.parent if result.events_path
                            else None))  # fmt: skip
    return result


if __name__ == "__main__":
    main()
