"""The `tests` grader: the run's product on a fresh checkout, the task's tests in the sandbox.

The product is put on a fresh checkout of the task's base by `products.py`'s rules (no build
debris; the task's test files as the base has them; one that does not apply is a grade error).

With `FAIL_TO_PASS` / `PASS_TO_PASS` lists, the test command runs with every listed test
appended (pytest node ids, say), so it exits 0 only when the FAIL_TO_PASS tests pass and the
PASS_TO_PASS ones still do; without lists, the task's whole test command must exit 0. The
command runs as an agent's `run_shell` does: under bubblewrap (the checkout read-write, the
system and Python read-only, no network, a cleared environment), its processes killed when
it ends or when `seconds` run out.
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import anyio.to_thread

from swarmflow.core.errors import ConfigError
from swarmflow.experiments.graders import TestsGrader
from swarmflow.experiments.products import Applied, ProductRules, apply_product
from swarmflow.experiments.task_tests import restores_tests, tests_among
from swarmflow.experiments.tasks import ExperimentTask
from swarmflow.tools.sandbox import ShellPolicy, bwrap_argv, bwrap_problem, sandbox_env
from swarmflow.tools.shell import Launch, ShellOutcome, host_launch, run_process
from swarmflow.tools.shell_limits import ShellLimits


@dataclass(frozen=True, slots=True)
class TestsVerdict:
    """What the tests said about one product."""

    __test__ = False

    resolved: bool
    note: str
    sandboxed: bool
    grade_error: str = ""
    """Why the product could not be graded at all (it does not apply), else ''."""
    applied: Applied = Applied()


async def grade_tests(
    grader: TestsGrader,
    task: ExperimentTask,
    base: str,
    diff_text: str,
    where: Path,
    *,
    debris: tuple[str, ...] = (),
) -> TestsVerdict:
    """Apply `diff_text` to a fresh checkout of the task's repository at `base` (in `where`,
    removed afterwards) by the rules of `products.py`, and run the task's tests there.
    `debris`: the arm's own debris patterns."""
    if task.repo is None or task.test is None:
        why = f"task {task.id} names no repo and test command"
        return TestsVerdict(False, why, False, grade_error=why)
    restore = restores_tests(grader, task)
    rules = ProductRules(
        (*task.debris, *debris), (lambda paths: tests_among(task, paths)) if restore else None
    )
    try:
        applied = await apply_product(Path(task.repo), base, diff_text, where, rules)
        if applied.problem is not None:
            return TestsVerdict(False, applied.problem, False, applied.problem, applied)
        verdict = await _run_lists(grader, task, where)
        return replace(verdict, note=verdict.note + _told(applied), applied=applied)
    finally:
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(where, ignore_errors=True))


def _told(applied: Applied) -> str:
    """What the note adds about the parts of the product that were not graded."""
    told = ""
    if applied.tests_edited:
        told += f"; its changes to the tests were discarded ({', '.join(applied.tests_edited)})"
    if applied.left_out:
        told += f"; {len(applied.left_out)} build-debris file(s) left out"
    return told


async def _run_lists(grader: TestsGrader, task: ExperimentTask, root: Path) -> TestsVerdict:
    assert task.test is not None
    listed = (*task.fail_to_pass, *task.pass_to_pass)
    command = " ".join([task.test, *(shlex.quote(t) for t in listed)])
    launch = await _launch(grader, command, root)
    outcome = await run_process(launch, grader.seconds)
    if not _passed(outcome):
        return TestsVerdict(False, _why(command, outcome, grader.seconds), launch.sandboxed)
    return TestsVerdict(True, "tests pass", launch.sandboxed)


async def _launch(grader: TestsGrader, command: str, root: Path) -> Launch:
    limits = ShellLimits().for_command(grader.seconds)
    policy = ShellPolicy(mode=grader.sandbox)
    if grader.sandbox != "none":
        problem = await anyio.to_thread.run_sync(bwrap_problem)
        if problem is None:
            argv = await anyio.to_thread.run_sync(bwrap_argv, root, command, policy)
            return Launch(argv, sandbox_env(policy), root, sandboxed=True, limits=limits)
        if grader.sandbox == "bwrap":
            raise ConfigError(f"the tests grader runs only in the sandbox, but {problem}")
    return host_launch(command, root, policy, limits)


def _passed(outcome: ShellOutcome) -> bool:
    return not outcome.timed_out and outcome.exit_code == 0


def _why(command: str, outcome: ShellOutcome, seconds: float) -> str:
    if outcome.timed_out:
        return f"`{command}` ran past {seconds:g} s and was killed"
    tail = " | ".join(line for line in outcome.output.strip().splitlines()[-2:])
    return f"`{command}` exited {outcome.exit_code}: {tail[:300]}"
