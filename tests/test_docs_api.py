"""docs/api.md names every public name, and every event type with its fields."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import swarmflow
from swarmflow.record import events

DOC = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text(encoding="utf-8")
MODULES = ("swarmflow", "swarmflow.testing", "swarmflow.channels", "swarmflow.models")


def _public(module: str) -> list[str]:
    return list(importlib.import_module(module).__all__)


@pytest.mark.parametrize("module", MODULES)
def test_every_public_name_is_documented(module: str) -> None:
    missing = [n for n in _public(module) if not re.search(rf"`{re.escape(n)}\b", DOC)]
    assert missing == [], f"docs/api.md does not mention {module}: {missing}"


def test_every_name_has_a_heading_or_a_table_row() -> None:
    """Each name of `swarmflow.__all__` is introduced, not only mentioned in passing."""
    headings = re.findall(r"^#{2,4} (.*)$", DOC, re.MULTILINE)
    introduced = {name for h in headings for name in re.findall(r"`(?:await |@)?([A-Za-z_]+)", h)}
    introduced |= set(re.findall(r"^\| `([A-Za-z_]+)", DOC, re.MULTILINE))
    missing = [name for name in swarmflow.__all__ if name not in introduced]
    assert missing == []


def _event_classes() -> list[type[events.EventBase]]:
    return [
        cls
        for cls in vars(events).values()
        if isinstance(cls, type)
        and issubclass(cls, events.EventBase)
        and "type" in cls.model_fields
    ]


def test_every_event_type_is_listed_with_its_fields() -> None:
    base = set(events.EventBase.model_fields) | {"type"}
    for cls in _event_classes():
        kind = cls.model_fields["type"].default
        row = re.search(rf"^\| `{kind}` \| `{cls.__name__}` \|(.*)\|$", DOC, re.MULTILINE)
        assert row is not None, f"docs/api.md has no row for {kind} ({cls.__name__})"
        documented = set(re.findall(r"`(\w+)`", row.group(1)))
        assert documented == set(cls.model_fields) - base, kind


def test_the_documented_imports_work() -> None:
    block = DOC.split("```python\n", 1)[1].split("```", 1)[0]
    exec(block, {})


def test_every_run_option_is_documented() -> None:
    import inspect

    options = [
        p.name
        for p in inspect.signature(swarmflow.run).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    heading = next(line for line in DOC.splitlines() if line.startswith("### `run("))
    for option in options:
        assert f"{option}=" in heading, option


def test_every_agent_field_is_documented() -> None:
    heading = next(line for line in DOC.splitlines() if line.startswith("### `Agent("))
    for field in swarmflow.Agent.model_fields:
        assert field in heading and f"| `{field}` |" in DOC or field == "name", field
