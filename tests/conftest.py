"""Suite-wide settings: real model calls are blocked, runs go to a temporary folder."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmflow.testing import BLOCK_ENV


@pytest.fixture(autouse=True)
def _block_real_model_calls(request: pytest.FixtureRequest) -> Iterator[None]:
    allowed = request.node.get_closest_marker("allow_model_calls") is not None
    old = os.environ.get(BLOCK_ENV)
    os.environ[BLOCK_ENV] = "0" if allowed else "1"
    yield
    if old is None:
        os.environ.pop(BLOCK_ENV, None)
    else:
        os.environ[BLOCK_ENV] = old


@pytest.fixture(autouse=True)
def _runs_in_tmp(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path_factory.mktemp("runs")
    monkeypatch.setenv("SWARMFLOW_RUNS", str(root))
    return root


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--production-events",
        action="store_true",
        help="leave event validation off, as production runs do (`make test` runs a subset so)",
    )


@pytest.fixture(autouse=True)
def _validate_every_event(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Build and validate the pydantic model of every event, even for JSONL-only runs.

    With `--production-events` validation stays off, the fast path production takes, so a
    bug that only the unvalidated path has still fails a test.
    """
    if request.config.getoption("--production-events"):
        monkeypatch.delenv("SWARMFLOW_VALIDATE_EVENTS", raising=False)
    else:
        monkeypatch.setenv("SWARMFLOW_VALIDATE_EVENTS", "1")


@pytest.fixture(autouse=True)
def _no_endpoint_probes(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run does not probe its endpoint before its first call (scripted servers answer each
    request in turn), and a probe's cache stays in a temporary folder; the probe's own tests
    turn it on."""
    monkeypatch.setenv("SWARMFLOW_PROBE", "off")
    monkeypatch.setenv("SWARMFLOW_PROBES", str(tmp_path_factory.mktemp("probes") / "e.json"))


@pytest.fixture(autouse=True)
def _sys_path_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that loads a `file.py:NAME` adds the file's folder to sys.path, as a script's
    run would; a test's folder is gone after it, so no later test imports from it."""
    monkeypatch.setattr(sys, "path", list(sys.path))
