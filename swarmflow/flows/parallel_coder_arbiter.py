"""The flagship flow: parallel coders, pipelined reviewers and a stateful arbiter.

This is the coding agent of openJiuwen's Fig. 3, step by step:

1. `budget()` decides how many coders to run.
2. `parallel.stream()` runs the coders, each in its own git worktree; each leaves a patch.
3. `compact()` drops the empty and failed candidates as they arrive.
4. `pipeline()` hands each surviving candidate to a reviewer as soon as it exists; the reviewer
   runs the repository's tests in that candidate's worktree.
5. An arbiter `agent_session()` is told every candidate and review as it arrives (no model
   call each), then asked once for a `Verdict`.
6. Below the confidence threshold (or for a choice that names no candidate), `human()` decides.
7. The chosen patch is applied to an output branch of the target repository.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from swarmflow.core.budget import BudgetSnapshot
from swarmflow.core.errors import ConfigError
from swarmflow.core.feedback_policy import Feedback
from swarmflow.core.outcomes import Empty, Failed, Ok, Outcome
from swarmflow.core.output import AgentOutput
from swarmflow.core.patch import Patch
from swarmflow.core.ports import HumanChannel
from swarmflow.core.team import Agent, Team
from swarmflow.flows.target_repo import default_test_command
from swarmflow.operators import agent, agent_session, budget, compact, human, parallel, pipeline
from swarmflow.operators.agent_session import SessionHandle
from swarmflow.record.events import PatchApplied
from swarmflow.record.sink import EventSink
from swarmflow.runner.lifecycle import RunResult, run
from swarmflow.runner.wiring import ModelSpec
from swarmflow.runtime.context import current_run, current_scope
from swarmflow.runtime.flow import Flow
from swarmflow.workspaces import apply_patch

FLOW_NAME = "parallel_coder_arbiter"
CARDS = ("coder.md.j2", "reviewer.md.j2", "arbiter.md.j2")
_SOURCE_CARDS = Path(__file__).resolve().parents[2] / "examples" / FLOW_NAME
_PACKAGED_CARDS = Path(__file__).resolve().parent / "cards" / FLOW_NAME  # in an installed wheel
EXAMPLE_DIR = _SOURCE_CARDS if _SOURCE_CARDS.is_dir() else _PACKAGED_CARDS
"""Where the role cards live in a source checkout (the repository root's `examples/`)."""

CODER_TOOLS = ("read_file", "list_files", "search", "edit", "write_file", "run_shell", "submit")
REVIEWER_TOOLS = ("read_file", "run_shell")
BUDGET: dict[str, float] = {"tokens": 2_000_000, "calls": 400}
TOKENS_PER_CODER = 400_000
CALLS_PER_CODER = 40
CODER_SHARE = 0.75
"""The part of what remains that coders may plan on; the rest pays reviewers and the arbiter."""

TEAM = Team(
    agents=[
        Agent(
            "coder",
            card="coder.md.j2",
            tools=CODER_TOOLS,
            workspace="worktree",
            allowance=1_500_000,
            max_steps=CALLS_PER_CODER,
            description="Writes one candidate fix in its own git worktree.",
        ),
        Agent(
            "reviewer",
            card="reviewer.md.j2",
            tools=REVIEWER_TOOLS,
            max_steps=12,
            description="Runs the tests in one candidate's worktree and reports.",
        ),
        Agent(
            "arbiter",
            card="arbiter.md.j2",
            max_steps=40,
            description="Weighs the candidates and reviews and picks one.",
        ),
    ],
    edges=[
        ("coder", "reviewer"),
        ("coder", "arbiter"),
        ("reviewer", "arbiter"),
        ("arbiter", "human"),
    ],
)

VERDICT_QUESTION = (
    "Every review is in. Pick the candidate to apply: the one whose tests pass and whose change "
    "is the smallest correct fix. Use null if none is acceptable. Give your confidence from 0 "
    "to 1 and a short reason in your own words."
)
HUMAN_TRIES = 3
HUMAN_QUESTION = (
    "The arbiter is not confident enough. Apply its choice? Answer y to approve, a candidate "
    "number to apply that candidate instead, or n to apply nothing."
)


class Review(BaseModel):
    """A reviewer's report on one candidate."""

    passed: bool = Field(description="True only when the test command exited with code 0.")
    tests: str = Field(description="The test run's summary line, e.g. '4 passed in 0.02s'.")
    notes: str = Field("", description="Anything the arbiter should know about the change.")


class Verdict(BaseModel):
    """The arbiter's decision."""

    choice: int | None = Field(
        description="Number of the chosen candidate, or null when none is acceptable."
    )
    confidence: float = Field(ge=0.0, le=1.0, description="How sure you are, from 0 to 1.")
    reason: str = Field(description="Why, in one or two sentences of your own words.")


class CandidateSummary(BaseModel):
    """What became of one coder's work."""

    index: int
    outcome: Literal["ok", "empty", "failed", "cancelled"]
    files: list[str] = []
    commit: str = ""
    tests: Literal["passed", "failed", "not run"] = "not run"
    note: str = ""
    """The test summary, or why the candidate was dropped."""


class FixResult(BaseModel):
    """The flow's output: the decision and where the chosen patch now lives."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    chosen: int | None
    patch: Patch | None
    verdict: Verdict
    decided_by: Literal["arbiter", "human", "nobody"]
    """Who made the final choice ("nobody" when there was nothing to choose from)."""
    output_branch: str | None = None
    commit: str | None = None
    candidates: list[CandidateSummary] = []


@dataclass(frozen=True, slots=True)
class Candidate:
    """A surviving coder output and the coder's index."""

    index: int
    work: AgentOutput


@dataclass(frozen=True, slots=True)
class Reviewed:
    """A candidate with its reviewer's output."""

    candidate: Candidate
    review: AgentOutput


@dataclass
class Board:
    """The flow's own record of the candidates, filled in as outcomes arrive."""

    summaries: dict[int, CandidateSummary] = field(default_factory=dict)
    patches: dict[int, Patch] = field(default_factory=dict)

    def coded(self, outcome: Outcome) -> None:
        """Record a coder's outcome."""
        self.summaries[outcome.index] = _summarise(outcome)
        if isinstance(outcome, Ok) and outcome.value.patch is not None:
            self.patches[outcome.index] = outcome.value.patch

    def reviewed(self, outcome: Outcome) -> None:
        """Record a review's outcome against its candidate."""
        summary = self.summaries.get(outcome.index)
        if summary is None:
            return
        if isinstance(outcome, Ok):
            review = outcome.value.review.value
            if isinstance(review, Review):
                summary.tests = "passed" if review.passed else "failed"
                summary.note = review.tests
        elif isinstance(outcome, Failed):
            summary.note = f"review failed: {outcome.error}"

    def ordered(self) -> list[CandidateSummary]:
        """The summaries by coder index."""
        return [self.summaries[i] for i in sorted(self.summaries)]


def _summarise(outcome: Outcome) -> CandidateSummary:
    """A candidate summary from a coder's branch outcome."""
    kind: Literal["ok", "empty", "failed", "cancelled"]
    if isinstance(outcome, Ok):
        patch = outcome.value.patch
        files = list(patch.files) if patch is not None else []
        commit = patch.commit if patch is not None else ""
        return CandidateSummary(index=outcome.index, outcome="ok", files=files, commit=commit)
    if isinstance(outcome, Failed):
        note = f"{type(outcome.error).__name__}: {outcome.error}"
        return CandidateSummary(index=outcome.index, outcome="failed", note=note)
    kind = "empty" if isinstance(outcome, Empty) else "cancelled"
    return CandidateSummary(index=outcome.index, outcome=kind, note=f"dropped: {kind}")


def coders_for(left: BudgetSnapshot, most: int) -> int:
    """How many coders the remaining budget pays for: at least one, at most `most`."""
    count = most
    if left.tokens is not None:
        count = min(count, int(left.tokens * CODER_SHARE) // TOKENS_PER_CODER)
    if left.calls is not None:
        count = min(count, int(left.calls * CODER_SHARE) // CALLS_PER_CODER)
    return max(1, count)


async def _code(task: str, index: int, coders: int, command: str) -> AgentOutput:
    """One coder's attempt, in its own worktree."""
    return await agent("coder", task, index=index, coders=coders, test_command=command)


async def _review(candidate: Candidate, command: str) -> Reviewed:
    """One reviewer runs the tests in the candidate's worktree."""
    prompt = [f"Review candidate {candidate.index}. The coder's report and patch:", candidate.work]
    out = await agent(
        "reviewer",
        prompt,
        output=Review,
        workspace=candidate.work,
        candidate=candidate.index,
        test_command=command,
    )
    return Reviewed(candidate, out)


async def _survivors(stream: Any, board: Board) -> AsyncIterator[Ok[Candidate]]:
    """Each coder outcome as it completes, recorded, compacted, and passed on if kept."""
    async with stream:
        async for outcome in stream:
            board.coded(outcome)
            if compact([outcome]):
                # An Ok keeps the coder's index, so the review runs on branch pipeline[index].
                yield Ok(Candidate(outcome.index, outcome.value), outcome.index, outcome.branch)


def _arbiter_message(outcome: Outcome) -> list[object]:
    """What the arbiter hears about one reviewed candidate."""
    if isinstance(outcome, Ok):
        done: Reviewed = outcome.value
        review = done.review.value if done.review.value is not None else done.review
        return [
            f"Candidate {outcome.index}: the coder's work.",
            done.candidate.work,
            f"Review of candidate {outcome.index}:",
            review,
        ]
    error = outcome.error if isinstance(outcome, Failed) else "no review"
    return [f"Candidate {outcome.index}: its review could not be completed ({error})."]


async def _hear_reviews(
    arbiter: SessionHandle, board: Board, task: str, coders: int, command: str
) -> None:
    """Run coders and reviewers; tell the arbiter about each review as it arrives."""
    coding = parallel.stream(lambda i: _code(task, i, coders, command), n=coders)
    stages = pipeline(_survivors(coding, board), lambda c: _review(c, command))
    async with stages as reviews:
        async for outcome in reviews:
            board.reviewed(outcome)
            await arbiter.tell(_arbiter_message(outcome))


Decider = Literal["arbiter", "human", "nobody"]


async def _decide(verdict: Verdict, threshold: float, board: Board) -> tuple[int | None, Decider]:
    """The arbiter's choice, or a person's when the arbiter is unsure or names no candidate."""
    valid = verdict.choice is None or verdict.choice in board.patches
    if valid and verdict.confidence >= threshold:
        return verdict.choice, "arbiter"
    return await _ask_person(verdict), "human"


async def _ask_person(verdict: Verdict) -> int | None:
    """Ask a person about the verdict until the answer can be read (three tries)."""
    question = HUMAN_QUESTION
    for _ in range(HUMAN_TRIES - 1):
        answer = await human(question, payload=verdict)
        try:
            return interpret_answer(answer, verdict)
        except ConfigError as exc:
            question = f"{exc.message}.\n{HUMAN_QUESTION}"
    return interpret_answer(await human(question, payload=verdict), verdict)


def interpret_answer(answer: Any, verdict: Verdict) -> int | None:
    """A person's answer as a candidate index: approve, pick another, or reject all."""
    if isinstance(answer, Verdict):
        return answer.choice
    if isinstance(answer, Mapping):
        choice = answer.get("choice", verdict.choice)
        return None if choice is None else int(choice)
    if isinstance(answer, bool):
        return verdict.choice if answer else None
    if isinstance(answer, int):
        return answer
    text = str(answer).strip().lower()
    if text.lstrip("-").isdigit():
        return int(text)
    if text in ("", "y", "yes", "ok", "approve", "approved"):
        return verdict.choice
    if text in ("n", "no", "none", "reject", "rejected"):
        return None
    raise ConfigError(f"cannot read the answer {answer!r}; use y, n or a candidate number")


async def _arbitrate(
    board: Board, task: str, coders: int, threshold: float, command: str
) -> Verdict | None:
    """The arbiter's verdict on the reviewed candidates; None when no candidate survived."""
    async with agent_session("arbiter", coders=coders, threshold=threshold) as arbiter:
        await _hear_reviews(arbiter, board, task, coders, command)
        if not board.patches:
            return None
        verdict: Verdict = await arbiter.ask(VERDICT_QUESTION, output=Verdict)
    return verdict


async def _apply(target: Path, patch: Patch, branch: str) -> str:
    """Point `branch` at the chosen patch and record the change in the event log."""
    sha = await apply_patch(target, patch, branch)
    run_ctx, scope = current_run("apply"), current_scope()
    run_ctx.deps.log.emit(
        PatchApplied,
        branch=scope.branch,
        repository=str(target),
        git_branch=branch,
        commit=sha,
        files=list(patch.files),
        source_commit=patch.commit,
    )
    return sha


async def _fix(
    task: str,
    target: str,
    *,
    threshold: float = 0.7,
    max_coders: int = 3,
    test_command: str = "",
    output_branch: str = "",
) -> FixResult:
    """Fix `task` in the git repository `target` with parallel coders and an arbiter."""
    command = test_command or default_test_command()
    coders = coders_for(await budget(), max_coders)
    board = Board()
    verdict = await _arbitrate(board, task, coders, threshold, command)
    if verdict is None:
        verdict = Verdict(choice=None, confidence=1.0, reason="no coder left a usable patch")
        return FixResult(
            chosen=None,
            patch=None,
            verdict=verdict,
            decided_by="nobody",
            candidates=board.ordered(),
        )
    chosen, decided_by = await _decide(verdict, threshold, board)
    patch = board.patches.get(chosen) if chosen is not None else None
    result = FixResult(
        chosen=chosen if patch is not None else None,
        patch=patch,
        verdict=verdict,
        decided_by=decided_by,
        candidates=board.ordered(),
    )
    if patch is None:
        return result
    branch = output_branch or f"swarmflow/{current_run('fix').deps.run_id}/result"
    sha = await _apply(Path(target), patch, branch)
    return result.model_copy(update={"output_branch": branch, "commit": sha})


def card_dir(cards: Path | None = None) -> Path:
    """The folder holding the role cards; ConfigError naming it when a card is missing."""
    folder = (cards or EXAMPLE_DIR).resolve()
    missing = [name for name in CARDS if not (folder / name).is_file()]
    if missing:
        raise ConfigError(
            f"role cards {missing} not found in {folder}; the flow's cards ship in "
            f"examples/{FLOW_NAME}/ of the swarmflow source tree (pass cards=<folder>)"
        )
    return folder


def make_flow(cards: Path | None = None, *, feedback: bool = False) -> Flow[..., FixResult]:
    """The flow, with its role cards looked up in `cards` (default: the example folder);
    `feedback`: a language server checks each coder's edits (docs/feedback.md)."""
    team = with_coder_feedback(TEAM) if feedback else TEAM
    return Flow(_fix, team=team, budget=BUDGET, name=FLOW_NAME, card_path=(str(card_dir(cards)),))


def with_coder_feedback(team: Team) -> Team:
    """`team` with language-server diagnostics on for its coders."""
    agents = [
        a.model_copy(update={"feedback": Feedback()}) if a.name == "coder" else a
        for a in team.agents
    ]
    return Team(agents=agents, edges=list(team.edges))


async def solve(
    target: Path,
    task: str,
    *,
    model: ModelSpec,
    human: HumanChannel | Sequence[Any] | None = None,
    sinks: Sequence[EventSink] = (),
    runs_root: Path | None = None,
    run_id: str | None = None,
    keep: bool = False,
    threshold: float = 0.7,
    max_coders: int = 3,
    test_command: str = "",
    cards: Path | None = None,
    feedback: bool = False,
) -> RunResult:
    """Run the flow on the git repository `target`, whose HEAD the coders' worktrees start from.

    `sinks` are extra event sinks (a live progress view); the run keeps its in-memory events
    and its `events.jsonl` either way.
    """
    inputs: dict[str, Any] = {
        "task": task,
        "target": str(target),
        "threshold": threshold,
        "max_coders": max_coders,
        "test_command": test_command or default_test_command(),
    }
    return await run(
        make_flow(cards, feedback=feedback),
        model=model,
        human=human,
        sinks=sinks,
        repo=target,
        runs_root=runs_root,
        run_id=run_id,
        keep_workspaces=keep,
        **inputs,
    )


# -- helpers the `.swarm` twin of this flow calls (examples/parallel_coder_arbiter/flow.swarm) --


def survivors(outcomes: Sequence[Outcome]) -> list[Candidate]:
    """The usable coder outputs, each numbered by its coder, after `compact()`."""
    kept = {id(value) for value in compact(outcomes)}
    return [
        Candidate(o.index, o.value) for o in outcomes if isinstance(o, Ok) and id(o.value) in kept
    ]


async def apply_verdict(
    verdict: Verdict, candidates: Sequence[Candidate], target: str
) -> FixResult:
    """Apply the chosen candidate's patch to an output branch of `target`."""
    patches = {c.index: c.work.patch for c in candidates if c.work.patch is not None}
    patch = patches.get(verdict.choice) if verdict.choice is not None else None
    result = FixResult(
        chosen=verdict.choice if patch is not None else None,
        patch=patch,
        verdict=verdict,
        decided_by="arbiter" if patch is not None else "nobody",
    )
    if patch is None:
        return result
    branch = f"swarmflow/{current_run('apply').deps.run_id}/result"
    sha = await _apply(Path(target), patch, branch)
    return result.model_copy(update={"output_branch": branch, "commit": sha})
