"""Sweeps: `Experiment(factors={"coders": [2, 4, 8], "listening": ["blocking", "passive"]})`.

A sweep names factors and their levels; each combination (every one, `grid="full"`, or those
listed, `grid=[{...}, ...]`) becomes an arm: the reference arm with those factors set and
nothing else changed, so each arm is a controlled difference from the reference (or from the
arm `sweep_from=` names). A key is a
factor of `Factors` (`listening`, `workspace`, `context`, `feedback`, `experience`, `goals`,
`harness`) or names an agent of the reference's flow, plural allowed (`coders` for the agent
`coder`): then its levels are how many instances of that agent the team has.
"""

from __future__ import annotations

import itertools
from typing import Any

from swarmflow.experiments.factors import FACTOR_NAMES, Factors, as_sequence, factor_label

SWEPT = tuple(n for n in FACTOR_NAMES if n != "instances")
"""The factors a sweep key names directly (a count of instances is keyed by its agent)."""


def expand_sweep(data: dict[str, Any], arm_type: type[Any]) -> dict[str, Any]:
    """The experiment's declaration with its sweep's arms added after the declared ones
    (`arm_type`: the `Arm` model, which a declared arm given as a mapping is read as)."""
    sweep = data.get("factors")
    if not sweep:
        return data
    if not isinstance(sweep, dict):
        raise ValueError("factors is a mapping: factor -> its levels")
    arms = [
        a if isinstance(a, arm_type) else arm_type.model_validate(a) for a in data.get("arms", ())
    ]
    base = data.get("sweep_from")
    reference = next((a for a in arms if (a.name == base if base else a.reference)), None)
    if reference is None:
        wanted = f"the arm {base!r}" if base else "the reference arm (reference=True)"
        raise ValueError(f"a sweep varies {wanted}, which is not declared")
    keys = {key: _factor_key(key, reference) for key in sweep}
    combos = _combinations(sweep, data.get("grid", "full"))
    swept = [_arm(reference, keys, combo) for combo in combos]
    return {**data, "arms": (*arms, *swept)}


def _factor_key(key: str, reference: Any) -> tuple[str, str]:
    """(`Factors` field, agent or '') a sweep key stands for."""
    if key in SWEPT:
        return key, ""
    agents = set(reference.flow.team.names)
    for name in (key, key[:-1] if key.endswith("s") else key):
        if name in agents:
            return "instances", name
    raise ValueError(
        f"sweep factor {key!r} is no factor ({', '.join(SWEPT)}) and names no agent of the "
        f"flow {reference.flow.name!r} (its agents: {', '.join(sorted(agents))})"
    )


def _combinations(sweep: dict[str, object], grid: object) -> list[dict[str, object]]:
    levels = {key: list(as_sequence(values)) for key, values in sweep.items()}
    if grid == "full":
        return [dict(zip(levels, c, strict=True)) for c in itertools.product(*levels.values())]
    if not isinstance(grid, list | tuple) or not all(isinstance(g, dict) for g in grid):
        raise ValueError('grid is "full" or a list of {factor: level} combinations')
    for combo in grid:
        for key, value in combo.items():
            if key not in levels:
                raise ValueError(f"grid combination {combo} names {key!r}, not a swept factor")
            if value not in levels[key]:
                raise ValueError(f"grid combination {combo}: {value!r} is no level of {key!r}")
    return [dict(c) for c in grid]


def _arm(reference: Any, keys: dict[str, tuple[str, str]], combo: dict[str, object]) -> Any:
    update: dict[str, object] = {}
    instances: dict[str, object] = dict(reference.factors.instances)
    for key, value in combo.items():
        field, agent = keys[key]
        if field == "instances":
            instances[agent] = value
        else:
            update[field] = value
    if instances != reference.factors.instances:
        update["instances"] = instances
    factors = Factors.model_validate({**_set_fields(reference.factors), **update})
    name = "_".join(factor_label(key, value) for key, value in combo.items())
    note = ", ".join(f"{key}={_shown(value)}" for key, value in combo.items())
    changed = {"name": name, "reference": False, "factors": factors, "note": note}
    return type(reference).model_validate({**dict(reference), **changed})


def _set_fields(factors: Factors) -> dict[str, object]:
    return {name: getattr(factors, name) for name in factors.chosen()}


def _shown(value: object) -> str:
    return factor_label("", value)[1:]
