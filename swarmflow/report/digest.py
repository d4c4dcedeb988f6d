"""A run folded from its events: what any report (text, HTML, spans) shows.

Nothing here comes from anywhere but the event log, so a report printed live and one read back
from `events.jsonl` later are the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from swarmflow.record.eventlog import AgentUsage
from swarmflow.record.events import (
    AgentFinished,
    CacheBust,
    CallReplayed,
    ContextCompacted,
    EventBase,
    HandoffRefused,
    HumanAnswered,
    HumanRequested,
    MessageRefused,
    ModelCalled,
    ModelRetried,
    OutcomesCompacted,
    PatchApplied,
    RailVetoed,
    RunFinished,
    RunResumed,
    RunStarted,
    SessionEnded,
    SessionStarted,
    SpawnRefused,
    ToolExecuted,
    ToolRefused,
    WorkspaceChanged,
)

_LAST_INDEX = re.compile(r"\[(\d+)\]$")


def branch_index(branch: str) -> int | None:
    """The index of the innermost branch segment: `parallel[2]` gives 2."""
    found = _LAST_INDEX.search(branch)
    return int(found.group(1)) if found else None


def agent_label(agent: str, branch: str) -> str:
    """`coder 2` for a coder on branch `parallel[2]`; the plain name outside any branch."""
    index = branch_index(branch)
    return agent if index is None else f"{agent} {index}"


@dataclass
class Spend(AgentUsage):
    """Model calls and what they cost (as the run's own tally counts them), with the
    prompt-prefix figures."""

    prompt_tokens: int = 0
    """Prompt tokens of the calls that had a previous request in their session."""
    prefix_tokens: int = 0
    cross_prompt_tokens: int = 0
    """Prompt tokens of the first calls of sessions after their agent's first one."""
    cross_shared_tokens: int = 0
    """Of those, the ones shared as a prefix with that agent's first session (card, tools,
    task), which a provider's cache can serve across sessions."""

    def add(self, e: ModelCalled, *, follows: bool) -> None:
        self.calls += 1
        self.tokens_in += e.tokens_in
        self.tokens_out += e.tokens_out
        self.tokens_cached += e.tokens_cached
        self.cost += e.cost
        if follows:  # a session's first request has nothing before it to repeat
            self.prompt_tokens += e.prompt_tokens
            self.prefix_tokens += e.prefix_tokens

    def absorb(self, other: Spend) -> None:
        """Add every count of `other` to this one's."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    @property
    def prefix_share(self) -> float | None:
        """The share of prompt tokens that repeat the previous request's prefix, over the
        requests that have a previous one in their session."""
        return self.prefix_tokens / self.prompt_tokens if self.prompt_tokens else None

    @property
    def cross_share(self) -> float | None:
        """The share of later sessions' first prompts shared with the agent's first session."""
        return (
            self.cross_shared_tokens / self.cross_prompt_tokens
            if self.cross_prompt_tokens
            else None
        )

    @property
    def cached_share(self) -> float | None:
        """The share of input tokens the provider served from its cache, where it says."""
        return (
            self.tokens_cached / self.tokens_in if self.tokens_cached and self.tokens_in else None
        )


@dataclass
class SessionDigest:
    """One session, as the log tells it."""

    id: str
    agent: str
    branch: str
    model: str = ""
    start: float = 0.0
    end: float | None = None
    spend: Spend = field(default_factory=Spend)
    state: str = ""
    reason: str = ""
    detail: str = ""
    preview: str = ""
    last_shell: ToolExecuted | None = None
    """The session's last `run_shell` call."""
    last_test: ToolExecuted | None = None
    """Its last `run_shell` call that ran tests (the candidates table shows it): the two last
    calls, not every one, so that a long session costs no more memory to report."""
    commit: str = ""
    files: list[str] = field(default_factory=list)
    last_prompt: int = 0
    compacted: bool = False
    """Whether a compaction happened since the last model call (the prefix may then break)."""
    pending: list[int] = field(default_factory=list)
    """The compactions (indices into `Digest.compactions`) awaiting the next call, which
    says how much of the prefix they kept."""

    @property
    def label(self) -> str:
        return agent_label(self.agent, self.branch)


@dataclass
class HumanExchange:
    """A question put to a person, and the answer if one came."""

    question: str
    payload: object
    channel: str
    answer: object = None
    answered_by: str = ""
    timed_out: bool = False


@dataclass
class Resume:
    """One resume of the run: when, and what its process replayed and paid for."""

    t: float
    recorded: int
    """Finished calls the journal held for this process to replay."""
    replayed: int = 0
    spend: Spend = field(default_factory=Spend)
    """What this process's own model calls cost (a replayed call costs nothing)."""


@dataclass
class Digest:
    """Everything a report shows, folded from the events one at a time (`add`)."""

    run_id: str = ""
    flow: str = ""
    inputs: dict[str, object] = field(default_factory=dict)
    agents: list[str] = field(default_factory=list)
    edges: list[tuple[str, str]] = field(default_factory=list)
    status: str = "unfinished"
    error: str | None = None
    output: object = None
    has_output: bool = False
    seconds: float = 0.0
    graph: list[list[object]] = field(default_factory=list)
    sessions: dict[str, SessionDigest] = field(default_factory=dict)
    humans: list[HumanExchange] = field(default_factory=list)
    applied: PatchApplied | None = None
    refusals: list[str] = field(default_factory=list)
    retries: list[str] = field(default_factory=list)
    compactions: list[str] = field(default_factory=list)
    """Each compaction level that fired, what it removed, and how much of the prompt prefix
    the next call kept (where the compaction broke it, and why)."""
    first_called: set[str] = field(default_factory=set)
    """The agents whose first session has made its first call."""
    prefix_breaks: list[str] = field(default_factory=list)
    """Calls whose prompt did not keep the previous one as its prefix, with no compaction."""
    cache_busts: dict[str, list[str]] = field(default_factory=dict)
    """The `cache_bust` events by their part (card, tools, message): one line each."""
    dropped: list[str] = field(default_factory=list)
    """What `compact` dropped, and why."""
    resumes: list[Resume] = field(default_factory=list)
    tokens_by_payment: dict[str, int] = field(default_factory=dict)
    """Tokens of every model call by how it was paid: "paid", "replayed" (its first payment,
    in an earlier process: not paid again), "repaid" (paid again: it was in flight when its
    process died)."""
    last_t: float = 0.0
    count: int = 0

    def by_agent(self) -> dict[str, Spend]:
        """Spend per agent, in declaration order (then any agent not declared)."""
        totals: dict[str, Spend] = {name: Spend() for name in self.agents}
        for s in self.sessions.values():
            totals.setdefault(s.agent, Spend()).absorb(s.spend)
        return totals

    def add(self, event: EventBase) -> None:
        """Fold one more event in (`digest` folds a whole log)."""
        self.last_t = event.t
        self.count += 1
        fold = _FOLD.get(type(event))
        if fold is not None:
            fold(self, event)
        if self.status == "unfinished":  # until run_finished, the run lasted to its last event
            self.seconds = self.last_t

    def total(self) -> Spend:
        """The run's spend over every session."""
        total = Spend()
        for spend in self.by_agent().values():
            total.absorb(spend)
        return total


# -- folding the events ---------------------------------------------------------------------


def _on_run_started(d: Digest, e: RunStarted) -> None:
    d.run_id, d.flow, d.inputs, d.agents = e.run_id, e.flow, dict(e.inputs), list(e.agents)
    d.edges = [(a, b) for a, b in e.edges]


def _on_run_finished(d: Digest, e: RunFinished) -> None:
    d.status, d.error, d.seconds = e.status, e.error, e.seconds
    d.output, d.has_output = e.output, e.status == "ok"
    d.graph = [list(node) for node in e.nodes]


def _on_session_started(d: Digest, e: SessionStarted) -> None:
    s = SessionDigest(e.session or "?", e.agent or "?", e.branch, model=e.model or "", start=e.t)
    d.sessions[s.id] = s


def _on_model_called(d: Digest, e: ModelCalled) -> None:
    tokens = e.recorded_tokens if e.payment == "replayed" else e.tokens_in + e.tokens_out
    d.tokens_by_payment[e.payment] = d.tokens_by_payment.get(e.payment, 0) + tokens
    s = d.sessions.get(e.session or "")
    if s is None:
        return
    if e.purpose in ("summary", "reflection"):  # spend, but no step of the session's prompt
        s.spend.add(e, follows=False)
        return
    if s.spend.calls and e.prefix_tokens < s.last_prompt and not s.compacted and e.prompt_tokens:
        d.prefix_breaks.append(
            f"{s.label} ({s.id}) call {e.step}: {e.prefix_tokens:,} of the previous "
            f"{s.last_prompt:,} prompt tokens kept, with no compaction"
        )
    first = s.last_prompt == 0 and not s.pending
    if first and s.agent in d.first_called:
        s.spend.cross_prompt_tokens += e.prompt_tokens
        s.spend.cross_shared_tokens += e.shared_prefix_tokens
    d.first_called.add(s.agent)
    for index in s.pending:
        d.compactions[index] += (
            f"; call {e.step} kept {e.prefix_tokens:,} of the previous {s.last_prompt:,} "
            "prompt tokens as its prefix"
        )
    s.pending.clear()
    s.spend.add(e, follows=s.spend.calls > 0)
    s.last_prompt, s.compacted = e.prompt_tokens, False
    if d.resumes:
        d.resumes[-1].spend.add(e, follows=False)


def shell_command(e: ToolExecuted) -> str:
    """The shell command of a `run_shell` event."""
    args = e.arguments
    return str(args.get("command", "")) if isinstance(args, dict) else str(args)


def _on_cache_bust(d: Digest, e: CacheBust) -> None:
    s = d.sessions.get(e.session or "")
    who = f"{s.label} ({s.id})" if s is not None else (e.agent or "?")
    d.cache_busts.setdefault(e.part, []).append(
        f"{who} call {e.step}: {e.where} differs from the previous request "
        f"({e.kept_tokens:,} of its {e.previous_tokens:,} prompt tokens kept)"
    )


def _on_tool_executed(d: Digest, e: ToolExecuted) -> None:
    s = d.sessions.get(e.session or "")
    if s is not None and e.tool == "run_shell":
        s.last_shell = e
        if "test" in shell_command(e):
            s.last_test = e


def _on_agent_finished(d: Digest, e: AgentFinished) -> None:
    s = d.sessions.get(e.session or "")
    if s is not None:
        s.preview = e.preview


def _on_session_ended(d: Digest, e: SessionEnded) -> None:
    s = d.sessions.get(e.session or "")
    if s is not None:
        s.state, s.reason, s.detail, s.end = e.state, e.reason, e.detail, e.t


def _on_workspace_changed(d: Digest, e: WorkspaceChanged) -> None:
    s = d.sessions.get(e.session or "")
    if s is not None:
        s.commit, s.files = e.commit, list(e.files)


def _on_patch_applied(d: Digest, e: PatchApplied) -> None:
    d.applied = e


def _on_compacted(d: Digest, e: ContextCompacted) -> None:
    s = d.sessions.get(e.session or "")
    if s is not None:
        s.compacted = True
    who = s.label if s is not None else (e.agent or "?")
    sizes = f", {e.tokens_before:,} -> {e.tokens_after:,} tokens" if e.tokens_before else ""
    why = f": {e.removed}" if e.removed else ""
    paid = f" (its calls cost ${e.cost:.4f}, {e.tokens_spent:,} tokens)" if e.tokens_spent else ""
    d.compactions.append(
        f"{who} ({e.session}): {e.level}, {e.messages_before} -> {e.messages_after} "
        f"messages{sizes}{why}{paid}"
    )
    if s is not None:
        s.pending.append(len(d.compactions) - 1)


def _on_outcomes_compacted(d: Digest, e: OutcomesCompacted) -> None:
    where = f" in {e.branch}" if e.branch else ""
    for item in e.dropped:
        d.dropped.append(
            f"compact{where} dropped outcome {item.get('index')}: {item.get('reason')}"
        )


def _on_resumed(d: Digest, e: RunResumed) -> None:
    d.status = "unfinished"  # the earlier process's end is not the run's
    d.resumes.append(Resume(e.t, e.recorded_calls))


def _on_replayed(d: Digest, e: CallReplayed) -> None:
    if d.resumes:
        d.resumes[-1].replayed += 1


def _on_retried(d: Digest, e: ModelRetried) -> None:
    d.retries.append(
        f"{e.agent} ({e.session}) attempt {e.attempt}: {e.error} (waited {e.delay:.1f}s)"
    )


def _on_human_requested(d: Digest, e: HumanRequested) -> None:
    d.humans.append(HumanExchange(e.question, e.payload, e.channel))


def _on_human_answered(d: Digest, e: HumanAnswered) -> None:
    if not d.humans or d.humans[-1].answered_by:
        d.humans.append(HumanExchange("", None, ""))
    asked = d.humans[-1]
    asked.answer, asked.answered_by, asked.timed_out = e.answer, e.answered_by, e.timed_out


def refusal_text(e: EventBase) -> str:
    """One line for any refusal event; '' for other events."""
    if isinstance(e, HandoffRefused):
        return f"handoff {e.source} -> {e.target} via {e.via}: {e.reason}"
    if isinstance(e, MessageRefused):
        return f"message {e.source} -> {e.target}: {e.reason}"
    if isinstance(e, ToolRefused):
        return f"tool {e.tool} for {e.agent}: {e.reason}"
    if isinstance(e, SpawnRefused):
        return f"spawn of {e.requested} by {e.agent}: {e.reason}"
    if isinstance(e, RailVetoed):
        return f"rail {e.rail} vetoed {e.hook} for {e.agent}: {e.reason}"
    return ""


def _on_refused(d: Digest, e: EventBase) -> None:
    d.refusals.append(refusal_text(e))


_FOLD: dict[type[EventBase], Callable[[Digest, Any], None]] = {
    RunStarted: _on_run_started,
    RunFinished: _on_run_finished,
    SessionStarted: _on_session_started,
    ModelCalled: _on_model_called,
    CacheBust: _on_cache_bust,
    ToolExecuted: _on_tool_executed,
    AgentFinished: _on_agent_finished,
    SessionEnded: _on_session_ended,
    WorkspaceChanged: _on_workspace_changed,
    PatchApplied: _on_patch_applied,
    ContextCompacted: _on_compacted,
    OutcomesCompacted: _on_outcomes_compacted,
    RunResumed: _on_resumed,
    CallReplayed: _on_replayed,
    ModelRetried: _on_retried,
    HumanRequested: _on_human_requested,
    HumanAnswered: _on_human_answered,
    HandoffRefused: _on_refused,
    MessageRefused: _on_refused,
    ToolRefused: _on_refused,
    SpawnRefused: _on_refused,
    RailVetoed: _on_refused,
}


def digest(events: Iterable[EventBase]) -> Digest:
    """Fold a run's events into what a report shows."""
    d = Digest()
    for event in events:
        d.add(event)
    return d
