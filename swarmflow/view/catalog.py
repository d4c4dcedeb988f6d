"""What a folder holds for the view: run directories and experiment folders, each under a key.

A key is the item's path relative to the folder given, written with `/` (`ROOT_KEY` for the
folder itself: a URL path ending in `.` would be read as the folder above). The view names
items by key only, and every request is answered from the catalog, never from a path taken
from a URL: nothing outside the folder can be named.

The scan goes two levels below the folder (a runs root, a folder of experiments), and into an
experiment's `arms/<arm>/runs/` folders; it follows no symbolic link and stops at `MAX_ITEMS`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from swarmflow.experiments.layout import MANIFEST as EXPERIMENT_FILE
from swarmflow.record.files import EVENTS_FILE

MAX_ITEMS = 5000
"""The most runs and experiments one view lists (a larger folder is cut, and says so)."""
MAX_DEPTH = 2
ROOT_KEY = "~"

Kind = Literal["run", "experiment"]


@dataclass(frozen=True, slots=True)
class Item:
    """A run directory or an experiment folder, by its key."""

    kind: Kind
    key: str
    path: Path
    experiment: str = ""
    """The key of the experiment a run belongs to, or ''."""


@dataclass
class Catalog:
    """Every item found under `root`, by key, in the order found."""

    root: Path
    items: dict[str, Item] = field(default_factory=dict)
    cut: bool = False
    """The scan stopped at `MAX_ITEMS`."""

    def runs(self) -> list[Item]:
        return [i for i in self.items.values() if i.kind == "run"]

    def experiments(self) -> list[Item]:
        return [i for i in self.items.values() if i.kind == "experiment"]

    def get(self, key: str, kind: Kind) -> Item | None:
        item = self.items.get(key)
        return item if item is not None and item.kind == kind else None

    def key_of(self, path: Path) -> str:
        rel = path.relative_to(self.root).as_posix()
        return ROOT_KEY if rel == "." else rel


def scan(root: Path) -> Catalog:
    """The runs and experiments under `root` (a runs root, an experiment folder, a run)."""
    catalog = Catalog(root)
    for item in _found(catalog, root, 0, ""):
        if len(catalog.items) >= MAX_ITEMS:
            catalog.cut = True
            break
        catalog.items[item.key] = item
    return catalog


def _found(catalog: Catalog, folder: Path, depth: int, experiment: str) -> Iterator[Item]:
    if _is_file(folder / EXPERIMENT_FILE):
        key = catalog.key_of(folder)
        yield Item("experiment", key, folder)
        yield from _experiment_runs(catalog, folder, key)
        return
    if _is_file(folder / EVENTS_FILE):
        yield Item("run", catalog.key_of(folder), folder, experiment)
        return
    if depth >= MAX_DEPTH:
        return
    for child in _folders(folder):
        yield from _found(catalog, child, depth + 1, experiment)


def _experiment_runs(catalog: Catalog, folder: Path, key: str) -> Iterator[Item]:
    for arm in _folders(folder / "arms"):
        for run in _folders(arm / "runs"):
            if _is_file(run / EVENTS_FILE):
                yield Item("run", catalog.key_of(run), run, key)


def _folders(folder: Path) -> list[Path]:
    """The folders in `folder`, by name, no symbolic link among them."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    return [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]


def _is_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


__all__ = ["EXPERIMENT_FILE", "MAX_ITEMS", "ROOT_KEY", "Catalog", "Item", "scan"]
