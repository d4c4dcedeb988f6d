"""What counts as empty: None, a blank string, an empty patch. Never `False` or `0`."""

from __future__ import annotations


def is_empty(value: object) -> bool:
    """True for None, blank strings and objects that say they are empty.

    Objects opt in with a `__swarmflow_empty__()` method (patches, agent outputs). `False`,
    `0` and empty containers are values, not emptiness.
    """
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    probe = getattr(type(value), "__swarmflow_empty__", None)
    return bool(probe(value)) if probe is not None else False
