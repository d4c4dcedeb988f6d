"""The public names of the adapter packages stay deliberate."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("package", ["swarmflow.tools", "swarmflow.workspaces"])
def test_all_is_sorted_and_importable(package: str) -> None:
    module = importlib.import_module(package)
    names = module.__all__
    assert names == sorted(names)
    assert all(hasattr(module, name) for name in names)
