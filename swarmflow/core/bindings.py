"""A context variable (None where nothing set it) set for a block, and put back after it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


@contextmanager
def bound(var: ContextVar[T | None], value: T) -> Iterator[T]:
    """Set `var` to `value` inside the block (tasks started there inherit it); yields `value`.

    The block's exit restores the value that was in force before, however the block ends."""
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)
