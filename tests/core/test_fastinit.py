"""`fast_init` keeps a frozen dataclass's behaviour while filling its slots directly."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from swarmflow.core.fastinit import fast_init
from swarmflow.core.messages import Message, ModelResponse, Usage


@dataclasses.dataclass(frozen=True, slots=True)
class _Plain:
    name: str
    count: int = 1
    tags: list[str] = dataclasses.field(default_factory=list)


@fast_init
@dataclasses.dataclass(frozen=True, slots=True)
class _Fast:
    name: str
    count: int = 1
    tags: list[str] = dataclasses.field(default_factory=list)


def test_same_signature_as_the_dataclass() -> None:
    plain, fast = inspect.signature(_Plain), inspect.signature(_Fast)
    assert [p.name for p in fast.parameters.values()] == [p.name for p in plain.parameters.values()]
    assert fast.parameters["count"].default == 1
    assert repr(fast.parameters["tags"].default) == "<factory>"


def test_defaults_factories_and_values() -> None:
    a, b = _Fast("a"), _Fast("b", 3, ["x"])
    assert (a.name, a.count, a.tags) == ("a", 1, [])
    assert (b.name, b.count, b.tags) == ("b", 3, ["x"])
    assert _Fast("a").tags is not a.tags  # each instance gets its own default list
    assert _Fast(name="k", tags=["t"]).tags == ["t"]
    with pytest.raises(TypeError):
        _Fast()  # type: ignore[call-arg]


def test_still_frozen_comparable_and_replaceable() -> None:
    item = _Fast("a", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        item.count = 3  # type: ignore[misc]
    assert item == _Fast("a", 2)
    assert dataclasses.replace(item, count=5) == _Fast("a", 5)
    assert repr(item) == "_Fast(name='a', count=2, tags=[])"


def test_the_hot_path_types_use_it() -> None:
    assert Message("user", "hi") == Message(role="user", content="hi")
    assert ModelResponse().usage == Usage()
    assert hash(Usage(1, 2)) == hash(Usage(input=1, output=2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        Message("user").role = "tool"  # type: ignore[misc]


def test_refuses_classes_it_cannot_speed_up() -> None:
    @dataclasses.dataclass(slots=True)
    class Mutable:
        x: int

    with pytest.raises(TypeError, match="frozen"):
        fast_init(Mutable)
