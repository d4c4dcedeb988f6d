"""Environment variables given in a declaration: a mapping or pairs, kept as sorted pairs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated

from pydantic import BeforeValidator


def env_pairs(
    value: Mapping[str, object] | Iterable[tuple[object, object]],
) -> tuple[tuple[str, str], ...]:
    """`value` as sorted (name, value) string pairs: hashable, so a frozen model can hold it,
    and in one order, so two declarations of the same variables compare equal."""
    items = value.items() if isinstance(value, Mapping) else value
    try:
        return tuple(sorted((str(k), str(v)) for k, v in items))
    except (TypeError, ValueError):  # pydantic says a ValueError in one line, with the field
        raise ValueError(
            "env must be a mapping of names to values, or (name, value) pairs; "
            f"got {type(value).__name__}"
        ) from None


EnvPairs = Annotated[tuple[tuple[str, str], ...], BeforeValidator(env_pairs)]
"""A model field of environment variables: given as a mapping or as pairs, held as `env_pairs`."""
