"""Every event and journal line goes through `json_line`: whatever it is given, it writes one
line of strict JSON that reads back as pydantic would have written the same data."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from swarmflow.record.jsonline import json_line


class Shape(BaseModel):
    name: str
    sides: int = 3


class Reading(BaseModel):
    value: float


class Colour(enum.Enum):
    RED = "red"


@dataclass(slots=True)
class Point:
    x: int
    y: int


class Pair(NamedTuple):
    left: str
    right: str


def read_back(line: bytes) -> Any:
    assert b"\n" not in line
    return json.loads(line)


@pytest.mark.parametrize(
    "value",
    [
        {"model": Shape(name="tri")},
        {"set": {3}, "frozen": frozenset({"a"})},
        {"path": Path("/tmp/x"), "enum": Colour.RED},
        {"dataclass": Point(1, 2), "named": Pair("a", "b"), "tuple": (1, "two")},
        {"bytes": b"raw", "nested": [{"deep": Shape(name="sq", sides=4)}]},
        {"text": "naïve ✓ 日本", "int": -(2**63), "float": 0.1, "none": None, "bool": True},
    ],
)
def test_a_line_reads_back_as_pydantic_would_write_the_data(value: dict[str, Any]) -> None:
    assert read_back(json_line(value)) == to_jsonable_python(value)


def test_keys_that_are_not_strings_become_strings() -> None:
    assert read_back(json_line({1: "a", 2.5: "b"})) == {"1": "a", "2.5": "b"}


def test_an_unknown_object_is_written_as_its_str() -> None:
    class Opaque:
        def __str__(self) -> str:
            return "opaque!"

    assert read_back(json_line({"x": Opaque()})) == {"x": "opaque!"}


def test_a_lone_surrogate_keeps_the_line_whole_and_reads_back_as_the_same_text() -> None:
    line = json_line({"text": "bad \udcff end", "other": "日本"})
    line.decode("ascii")  # escaped: the line is valid UTF-8 whatever the text held
    assert read_back(line) == {"text": "bad \udcff end", "other": "日本"}


def test_an_integer_wider_than_64_bits_is_written_exactly() -> None:
    assert read_back(json_line({"big": 2**70})) == {"big": 2**70}


@pytest.mark.parametrize("odd", ["bad \udcff", "plain"])
def test_a_float_that_is_not_finite_is_null_on_every_path(odd: str) -> None:
    line = json_line(
        {"inf": math.inf, "nan": math.nan, "text": odd, "in": Reading(value=-math.inf)}
    )
    assert b"Infinity" not in line and b"NaN" not in line
    data = json.loads(line, parse_constant=lambda name: pytest.fail(f"not strict JSON: {name}"))
    assert data["inf"] is None and data["nan"] is None and data["in"] == {"value": None}
