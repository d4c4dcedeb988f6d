"""docs/architecture.md shows the state machine and event types the code really has."""

import importlib.util
import re
from pathlib import Path

from swarmflow.core.states import mermaid
from swarmflow.record import events

DOC = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text()


def test_the_state_diagram_is_the_transition_table() -> None:
    assert f"```mermaid\n{mermaid()}\n```" in DOC


def test_every_event_type_is_listed() -> None:
    for cls in vars(events).values():
        if (
            isinstance(cls, type)
            and issubclass(cls, events.EventBase)
            and "type" in cls.model_fields
        ):
            assert f"| `{cls.model_fields['type'].default}` |" in DOC


def test_every_package_is_in_the_layers_table() -> None:
    """A package added (or moved) shows in the table of layers, and no row names a package
    that is gone."""
    package = Path(__file__).resolve().parents[1] / "swarmflow"
    table = DOC.split("## Layers", 1)[1].split("## ", 1)[0]
    for sub in package.iterdir():
        if (sub / "__init__.py").exists():
            assert f"`swarmflow.{sub.name}`" in table, sub.name
    for named in re.findall(r"`(swarmflow(?:\.\w+)*)`", table):
        assert importlib.util.find_spec(named) is not None, named


def test_every_module_the_concept_table_names_exists() -> None:
    root = Path(__file__).resolve().parents[1]
    table = DOC.split("## Which module holds which concept", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`(swarmflow/[\w/]*(?:\.py)?)`", table)
    assert named
    for path in named:
        assert (root / path).exists(), path
