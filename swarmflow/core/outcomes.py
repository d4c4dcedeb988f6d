"""Typed outcomes of a branch or pipeline item: `Ok`, `Failed`, `Cancelled`, `Empty`.

Errors travel as data: an operator never turns a failure into `None`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Ok(Generic[T]):
    """The branch returned a value."""

    value: T
    index: int = 0
    branch: str = ""

    @property
    def ok(self) -> bool:
        return True


class _NoValue:
    """An outcome that carries no value: not ok, its `value` None."""

    __slots__ = ()

    @property
    def ok(self) -> bool:
        return False

    @property
    def value(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class Failed(_NoValue):
    """The branch raised."""

    error: BaseException
    index: int = 0
    branch: str = ""


@dataclass(frozen=True, slots=True)
class Cancelled(_NoValue):
    """The branch was cancelled (early stop, or a closed consumer)."""

    index: int = 0
    branch: str = ""
    reason: str = "cancelled"


@dataclass(frozen=True, slots=True)
class Empty:
    """The branch returned nothing usable: None, an empty string or an empty patch."""

    index: int = 0
    branch: str = ""
    value: object = None

    @property
    def ok(self) -> bool:
        return False


Outcome = Ok[Any] | Failed | Cancelled | Empty
