"""Numbers with units: `400k` tokens, `2M`, `30m` of wall time, `$5` of cost."""

from __future__ import annotations

from typing import Literal

Dimension = Literal["count", "duration", "cost"]

COUNT_SUFFIXES = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
DURATION_SUFFIXES = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
UNIT_HELP = (
    "use k, M or G for counts (400k, 2M), ms, s, m, h or d for durations (30m), $ for cost ($5)"
)


class UnitError(ValueError):
    """A number carries a suffix that is not a known unit."""


def parse_quantity(text: str) -> tuple[float, Dimension, str]:
    """`(value, dimension, unit)` for a NUMBER or COST token's text."""
    if text.startswith("$"):
        value, unit = _split(text[1:])
        if unit:
            raise UnitError(
                f"cost {text} has an extra suffix '{unit}'; write a cost as $5 or $0.50"
            )
        return value, "cost", "$"
    value, unit = _split(text)
    if unit in COUNT_SUFFIXES:
        return value * COUNT_SUFFIXES[unit], "count", unit
    if unit in DURATION_SUFFIXES:
        return value * DURATION_SUFFIXES[unit], "duration", unit
    raise UnitError(f"unknown unit '{unit}' in {text}; {UNIT_HELP}")


def _split(text: str) -> tuple[float, str]:
    end = 0
    while end < len(text) and (text[end].isdigit() or text[end] in "._"):
        end += 1
    digits, unit = text[:end].replace("_", ""), text[end:]
    try:
        return float(digits), unit
    except ValueError:
        raise UnitError(f"{text} is not a number") from None


def show_quantity(value: float, dimension: str) -> str:
    """A readable form of a quantity for messages: `1.6M`, `30m`, `$5.00`."""
    if dimension == "cost":
        return f"${value:.2f}"
    if dimension == "duration":
        return _show_duration(value)
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def _show_duration(seconds: float) -> str:
    for suffix, scale in (("h", 3600.0), ("m", 60.0)):
        if seconds >= scale and (seconds / scale).is_integer():
            return f"{seconds / scale:g}{suffix}"
    return f"{seconds:g}s"
