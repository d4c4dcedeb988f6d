"""The model a command runs with, chosen the same way by `run`, `resume` and `batch`.

- `--model NAME`: a model on an OpenAI-compatible endpoint (`OPENAI_BASE_URL`,
  `OPENAI_API_KEY`), with the endpoint options of `model_options`;
- `--model-object REF`: a model made in Python, named as a flow is (`file.py:NAME` or
  `module:NAME`): a model object (anything with `async complete(request)`, such as a
  `swarmflow.testing.FunctionModel`), or a function that makes one, called with no arguments;
- `--demo`: the scripted offline model.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from swarmflow.cli.flow_refs import described, load_python_object
from swarmflow.cli.model_options import add_model_options, model_from_args
from swarmflow.core.errors import ConfigError

NO_MODEL = (
    "choose a model: --model NAME (an OpenAI-compatible endpoint), --model-object "
    "file.py:NAME (a model made in Python), or --demo to run offline"
)
OBJECT_HELP = (
    "a model made in Python, as file.py:NAME or module:NAME: a model object (with async "
    "complete(request), e.g. a swarmflow.testing.FunctionModel) or a function that makes one, "
    "called with no arguments"
)

_WANTED = " (an object with async complete(request), or a function that makes one)"


def add_model_choice(parser: argparse.ArgumentParser, *, model_help: str, demo_help: str) -> None:
    """`--model`, `--model-object` and `--demo` (one of them), and the endpoint options."""
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--model", metavar="NAME", help=model_help)
    chosen.add_argument("--model-object", metavar="REF", help=OBJECT_HELP)
    chosen.add_argument("--demo", action="store_true", help=demo_help)
    add_model_options(parser)


def model_chosen(args: argparse.Namespace) -> bool:
    """Whether one of `--model`, `--model-object` and `--demo` was given."""
    return bool(args.model or args.model_object or args.demo)


@dataclass(frozen=True, slots=True)
class ChosenModel:
    """The model, and whether this command made it (then it closes it when done)."""

    model: Any
    owned: bool

    async def close(self) -> None:
        close = getattr(self.model, "aclose", None) if self.owned else None
        if close is not None:
            await close()


def chosen_model(args: argparse.Namespace) -> ChosenModel:
    """The model the options name, made now, so a mistake is reported before anything runs.

    Raises:
        ConfigError: no endpoint for `--model`, or `--model-object` names no model.
    """
    if args.demo:
        from swarmflow.flows.offline_model import offline_model

        return ChosenModel(offline_model(), owned=False)
    if args.model_object:
        return model_object(args.model_object)
    if not args.model:
        raise ConfigError(NO_MODEL)
    return ChosenModel(model_from_args(args), owned=True)


def model_object(reference: str) -> ChosenModel:
    """The model `reference` names: the object itself, or what the function it names makes.

    Raises:
        ConfigError: it cannot be loaded, the function fails, or what it gives is no model.
    """
    found = load_python_object(reference)
    if _is_model(found):
        return ChosenModel(found, owned=False)
    if not callable(found):
        raise ConfigError(f"--model-object {reference} is {described(found)}, not a model{_WANTED}")
    try:
        made = found()
    except Exception as exc:  # the user's factory: its failure is one line, not a traceback
        raise ConfigError(
            f"--model-object {reference}: calling it failed: {type(exc).__name__}: {exc}"
        ) from None
    if not _is_model(made):
        raise ConfigError(
            f"--model-object {reference} made {described(made)}, not a model{_WANTED}"
        )
    return ChosenModel(made, owned=True)


def _is_model(value: Any) -> bool:
    return not isinstance(value, type) and callable(getattr(value, "complete", None))
