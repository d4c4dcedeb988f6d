"""docs/architecture.md shows the state machine and event types the code really has."""

from pathlib import Path

from swarmflow.core import events
from swarmflow.core.states import mermaid

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
