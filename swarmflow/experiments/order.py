"""The order in which an experiment's runs start: all arms interleaved, in seeded random blocks.

A block is one task of one repeat: every arm's run of it, in a random order. The tasks of a
repeat come in a random order, and every run of repeat r comes before any run of repeat r + 1.
So a server that slows down, fills its cache or is redeployed during a long experiment weighs
on every arm alike, and an arm's place in a block is chance. The order is a function of the
seed, the arms, the tasks and the repeats alone, and `experiment.json` records it with its seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from swarmflow.experiments.layout import RunKey


def run_order(arms: Sequence[str], tasks: Sequence[str], repeats: int, seed: int) -> list[RunKey]:
    """Every run of `arms` x `tasks` x `repeats`, in the order they start."""
    chance = random.Random(seed)
    order: list[RunKey] = []
    for repeat in range(1, repeats + 1):
        for task in chance.sample(list(tasks), len(tasks)):
            order.extend(RunKey(arm, task, repeat) for arm in chance.sample(list(arms), len(arms)))
    return order
