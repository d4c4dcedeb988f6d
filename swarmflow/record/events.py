"""The event stream: frozen pydantic models in one union tagged by `type`.

This is a public, versioned contract. Names are past tense. Every event carries the envelope:
run id, contiguous sequence number, wall timestamp, seconds since the run started, agent,
session and branch path (for example `parallel[2]/pipeline[0]`).

Annotations here are evaluated eagerly (no `from __future__ import annotations`): pydantic then
has real types at class creation instead of strings to resolve, which makes import cheaper.
"""

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

EVENT_SCHEMA_VERSION = 1


class EventBase(BaseModel):
    """The common envelope."""

    # Schemas are built on first use: importing swarmflow must stay cheap.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    run_id: str
    seq: int
    ts: float
    t: float
    agent: str | None = None
    session: str | None = None
    branch: str = ""


class RunStarted(EventBase):
    type: Literal["run_started"] = "run_started"
    flow: str
    inputs: dict[str, object] = {}
    limits: dict[str, float | int | None] = {}
    agents: list[str] = []
    edges: list[tuple[str, str]] = []
    roles: dict[str, dict[str, Any]] = {}
    """Per agent: its tools, allowance, workspace and step limit, as declared."""
    schema_version: int = EVENT_SCHEMA_VERSION


class RunFinished(EventBase):
    type: Literal["run_finished"] = "run_finished"
    status: Literal["ok", "failed", "cancelled", "paused"]
    error: str | None = None
    tokens: int = 0
    cost: float = 0.0
    calls: int = 0
    seconds: float = 0.0
    graph: str = ""
    """The executed run graph as Mermaid (large fan-outs summarised)."""
    output: object = None
    """The flow's return value as JSON (None unless the run ended ok)."""
    nodes: list[list[object]] = []
    """The executed run graph, one `[id, operator, branch, parent, label, status, after]` per
    node: `parent` is the operator it ran inside, `after` the sibling that had finished when it
    started (the step it followed); both ids or None."""


class OperatorStarted(EventBase):
    type: Literal["operator_started"] = "operator_started"
    operator: str
    node: str
    detail: dict[str, object] = {}


class OperatorFinished(EventBase):
    type: Literal["operator_finished"] = "operator_finished"
    operator: str
    node: str
    status: Literal["ok", "failed", "cancelled"] = "ok"
    detail: dict[str, object] = {}


class SessionStarted(EventBase):
    type: Literal["session_started"] = "session_started"
    model: str | None = None
    tools: list[str] = []


class ModelCalled(EventBase):
    type: Literal["model_called"] = "model_called"
    model: str | None = None
    step: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    latency: float = 0.0
    cost: float = 0.0
    finish_reason: str = "stop"
    tool_calls: list[str] = []
    prompt_tokens: int = 0
    """The prompt's estimated tokens, as the session sent it."""
    prefix_tokens: int = 0
    """Of those, the ones that repeat the previous request's prompt prefix in this session."""
    output_mode: str | None = None
    """The form asked of the server: a structured answer's, "json_schema" or "json_object" (the
    server constrained it) or "prompt" (asked in the prompt and validated), or a forced tool
    call's when it went as a JSON answer over the tools; None when the call asked for neither."""
    request_shape: dict[str, object] | None = None
    """A harness's call (`swarmflow.harnesses`): what its request held (messages by role,
    tool names, whether it streamed, the `max_tokens` it asked for, its other keys)."""
    purpose: Literal["turn", "summary", "reflection", "judge", "harness", ""] = "turn"
    """What the call was for: "turn" (a step of a session), "summary" (a context processor's
    call, docs/context.md), "reflection" (experience notes at the run's end), "judge" (the
    rubric grader's), "harness" (an outside program's, through the metering endpoint); ""
    in a log written before purposes were recorded."""
    payment: Literal["paid", "replayed", "repaid"] = "paid"
    """"paid": sent to the model and charged; "replayed": answered from the journal of an
    interrupted run at 0 tokens (its tokens are in `recorded_tokens`); "repaid": sent again
    because an earlier process died while it was in flight (its first payment is unknown)."""
    recorded_tokens: int = 0
    """A replayed call: the tokens its first, recorded payment used (not paid again)."""
    shared_prefix_tokens: int = 0
    """For a session's first call: the prompt tokens it shares as a prefix with the first
    call of an earlier session of the same agent in the run (card, tool schemas, task)."""


class EndpointProbed(EventBase):
    """What the run's model endpoint was found to honour before the first call, and so what
    the run uses where no option chose (`swarmflow.models.probe`)."""

    type: Literal["endpoint_probed"] = "endpoint_probed"
    base_url: str
    model: str
    structured: str
    forced_tools: str
    calls_tools_unforced: bool
    streaming: bool
    context_length: int | None = None
    notes: list[str] = []


class ModelRetried(EventBase):
    type: Literal["model_retried"] = "model_retried"
    attempt: int
    error: str
    delay: float


class OutputModeSteppedDown(EventBase):
    """A model's endpoint gave up a form its server rejected, for every later call (once)."""

    type: Literal["output_mode_stepped_down"] = "output_mode_stepped_down"
    endpoint: str
    """The model and its base URL."""
    rejected: str
    """The form the server rejected: "json_schema" or "json_object"."""
    chosen: str
    """The form asked for from now on: "json_object" or "prompt"."""
    reason: str
    """What the server said."""


class ToolExecuted(EventBase):
    type: Literal["tool_executed"] = "tool_executed"
    tool: str
    call_id: str = ""
    arguments: dict[str, object] | str = {}
    ok: bool = True
    result: str = ""
    duration: float = 0.0


class ToolRefused(EventBase):
    type: Literal["tool_refused"] = "tool_refused"
    tool: str
    call_id: str = ""
    reason: str


class MessageSent(EventBase):
    type: Literal["message_sent"] = "message_sent"
    source: str
    target: str
    via: str = "message_agent"
    text: str = ""


class MessageRefused(EventBase):
    type: Literal["message_refused"] = "message_refused"
    source: str
    target: str
    reason: str


class HandoffRefused(EventBase):
    """A value from `source` would have reached `target` (prompt, session message, template
    variable or human question) without the edge; nothing was sent."""

    type: Literal["handoff_refused"] = "handoff_refused"
    source: str
    target: str
    via: str
    reason: str


class SpawnRefused(EventBase):
    type: Literal["spawn_refused"] = "spawn_refused"
    requested: str
    reason: str


class AgentFinished(EventBase):
    type: Literal["agent_finished"] = "agent_finished"
    produced_content: bool
    preview: str = ""


class SessionTold(EventBase):
    """A message added to a session without a turn (`tell`): no model call was made; the
    session's next turn carries it."""

    type: Literal["session_told"] = "session_told"
    text: str = ""
    """The message, cut to a preview."""


class SessionEnded(EventBase):
    type: Literal["session_ended"] = "session_ended"
    state: Literal["done", "stopped", "error"]
    reason: str
    detail: str = ""
    steps: int = 0
    tokens: int = 0


class ContextCompacted(EventBase):
    type: Literal["context_compacted"] = "context_compacted"
    level: str
    messages_before: int
    messages_after: int
    tokens_before: int = 0
    """The history's estimated tokens before this level ran, and after it."""
    tokens_after: int = 0
    removed: str = ""
    """What the level removed, and where it went when it can be read back (a file)."""
    cost: float = 0.0
    """What the level's own model calls were charged (a summary's), in USD."""
    tokens_spent: int = 0
    """The tokens those calls used (each is also recorded as a `model_called`)."""


class CacheBust(EventBase):
    """A model call whose request did not repeat the session's previous request as its
    prefix, with no compaction between them: a prompt cache could not serve what followed
    the first differing part (`sessions.prefix.first_difference`). Recorded after the call's
    `model_called`."""

    type: Literal["cache_bust"] = "cache_bust"
    step: int = 0
    part: Literal["tools", "card", "message"]
    where: str
    """The first differing part in words ("the role card", "message 4 (tool)")."""
    kept_tokens: int = 0
    """The estimated tokens the request still shared with the previous one."""
    previous_tokens: int = 0
    """The previous request's estimated prompt tokens."""


class ContextLevelRefused(EventBase):
    """A context level that could not run (a summary the budget could not pay for, or a
    summariser that failed); the next levels fit the request instead."""

    type: Literal["context_level_refused"] = "context_level_refused"
    level: str
    reason: str


class ExperienceRetrieved(EventBase):
    """Experience notes from earlier runs offered to a session in its card."""

    type: Literal["experience_retrieved"] = "experience_retrieved"
    query: str
    notes: list[dict[str, object]] = []
    """Each offered note: its id, kind, text and the run it came from."""


class ExperienceWritten(EventBase):
    """Notes a run's reflection distilled from one agent's sessions and stored."""

    type: Literal["experience_written"] = "experience_written"
    store: str
    notes: list[dict[str, object]] = []
    cost: float = 0.0


class ExperienceRefused(EventBase):
    """A reflection that could not run or whose notes could not be stored, and why."""

    type: Literal["experience_refused"] = "experience_refused"
    reason: str


class RailVetoed(EventBase):
    type: Literal["rail_vetoed"] = "rail_vetoed"
    hook: str
    rail: str
    reason: str


class GoalEvaluated(EventBase):
    type: Literal["goal_evaluated"] = "goal_evaluated"
    evaluator: str
    decision: Literal["continue", "complete", "blocked"]
    note: str = ""


class WorkspaceChanged(EventBase):
    type: Literal["workspace_changed"] = "workspace_changed"
    workspace: str
    commit: str
    git_branch: str = ""
    files: list[str] = []


class SharedFileWritten(EventBase):
    """A write to the run's shared (STORM) workspace was accepted as a new file version."""

    type: Literal["shared_file_written"] = "shared_file_written"
    path: str
    version: int
    previous: int
    """The version the writer's snapshot held (the one this write replaced)."""


class EvidenceDelivered(EventBase):
    """An inbox item given to the model at a step boundary, inside the one evidence message
    of that step (`shown=False`: cut by the message's size cap)."""

    type: Literal["evidence_delivered"] = "evidence_delivered"
    source: str
    text: str = ""
    """The item, cut to a preview."""
    step: int = 0
    """The model call it came before (the session's steps so far plus one)."""
    shown: bool = True


class DiagnosticsPosted(EventBase):
    """A language-server pass after an edit found new diagnostics and posted them."""

    type: Literal["diagnostics_posted"] = "diagnostics_posted"
    server: str
    files: list[str] = []
    codes: list[str] = []
    """One per diagnostic posted, in the order posted."""
    seconds: float = 0.0
    """How long the pass took, from sending the change to having the diagnostics."""
    late: bool = False
    """The pass outlasted the session's wait: posted at a later step."""


class FeedbackChecked(EventBase):
    """A language-server pass after an edit, whatever it found (its cost is `seconds`)."""

    type: Literal["feedback_checked"] = "feedback_checked"
    server: str
    files: list[str] = []
    new: int = 0
    """New diagnostics at or above the severity (before the limit)."""
    seconds: float = 0.0
    timed_out: bool = False
    """The pass outlasted the session's wait (what comes later goes to a later step)."""


class FeedbackUnavailable(EventBase):
    """A language server could not start or stopped answering: the run goes on without it."""

    type: Literal["feedback_unavailable"] = "feedback_unavailable"
    server: str
    reason: str


class WorkspaceInvalidated(EventBase):
    """A write in the shared workspace made this session's read of a file stale; it is told
    at its next step."""

    type: Literal["workspace_invalidated"] = "workspace_invalidated"
    path: str
    version: int
    writer: str | None = None
    """The agent that wrote it (None: changed outside the workspace tools)."""
    seen: int = 0
    """The version this session had read."""


class CommandsMissed(EventBase):
    """Commands others ran in the shared workspace since this session's last step."""

    type: Literal["commands_missed"] = "commands_missed"
    commands: list[dict[str, object]] = []
    """Each: command, agent, exit_code, files (path -> version)."""


class FileReserved(EventBase):
    """An agent reserved (or released) a file of the shared workspace."""

    type: Literal["file_reserved"] = "file_reserved"
    path: str
    seconds: float = 0.0
    """How long the reservation holds (0: released)."""


class ReservationRefused(EventBase):
    """A write or a reservation refused: another agent holds the file."""

    type: Literal["reservation_refused"] = "reservation_refused"
    path: str
    holder: str
    seconds_left: float


class SandboxUnavailable(EventBase):
    """`run_shell` runs without the sandbox this run (said once per run); in an experiment's
    own log (`OUT/events.jsonl`), its `tests` grader runs products' code without it."""

    type: Literal["sandbox_unavailable"] = "sandbox_unavailable"
    reason: str


class PatchApplied(EventBase):
    """A candidate's patch landed on an output branch of the target repository."""

    type: Literal["patch_applied"] = "patch_applied"
    repository: str
    git_branch: str
    commit: str
    files: list[str] = []
    source_commit: str = ""
    """The candidate's own commit that was applied."""


class HumanRequested(EventBase):
    type: Literal["human_requested"] = "human_requested"
    question: str
    payload: object = None
    channel: str
    token: str = ""


class HumanAnswered(EventBase):
    type: Literal["human_answered"] = "human_answered"
    answer: object = None
    answered_by: str
    timed_out: bool = False
    token: str = ""
    """The token of the question answered (its `human_requested` event's): a resumed run
    gives this answer again to that token only. Empty for a timeout that failed the run."""


class RunResumed(EventBase):
    """A run interrupted (killed, paused, failed) goes on in a new process: same id and log."""

    type: Literal["run_resumed"] = "run_resumed"
    flow: str
    recorded_calls: int = 0
    """Finished calls in the journal that the replay may return without calling the model."""
    strict: bool = False


class CallReplayed(EventBase):
    """A call of a resumed run returned its journaled product: no model call, no tokens."""

    type: Literal["call_replayed"] = "call_replayed"
    index: int
    digest: str
    recorded_session: str = ""


class ResumeDivergedAt(EventBase):
    """A resumed flow sent something else than the journal records at this call."""

    type: Literal["resume_diverged"] = "resume_diverged"
    index: int
    digest: str
    strict: bool = False


class ThreadCreated(EventBase):
    """A board thread was opened (runtime.board); every participant is reachable from its
    creator."""

    type: Literal["thread_created"] = "thread_created"
    thread: str
    board: str = ""
    """The board it is on: "" the run's own, else a team call's (`team[0]`,
    `parallel[1]/team[0]`; docs/board.md). The same on every board event."""
    creator: str
    participants: list[str] = []


class BoardMessagePosted(EventBase):
    """A message was posted to a board thread. `message_seq` orders the board's messages (per
    thread too); `recipients` are the participants it reached (the sender's edges allow them)."""

    type: Literal["board_message_posted"] = "board_message_posted"
    thread: str
    board: str = ""
    sender: str
    text: str = ""
    """A preview of the content."""
    mentions: list[str] = []
    recipients: list[str] = []
    message_seq: int
    rest: str = ""
    """The content past the preview (empty when `text` holds all of it): `text + rest` is
    the whole message, as a resumed run puts it back on its board."""


class MentionDelivered(EventBase):
    """An @mention reached its recipient: in a `wait_for_mention` ("blocking") or at a step
    boundary of its session ("passive")."""

    type: Literal["mention_delivered"] = "mention_delivered"
    thread: str
    board: str = ""
    sender: str
    recipient: str
    message_seq: int
    mode: Literal["blocking", "passive"]


class BoardRefused(EventBase):
    """The board refused a delivery: an invitation to a thread, a message to a participant, a
    mention, or a request it cannot serve (unknown thread, oversized content). Nothing
    reached `target`."""

    type: Literal["board_refused"] = "board_refused"
    route: Literal["invitation", "message", "mention", "request"]
    source: str
    target: str = ""
    thread: str = ""
    board: str = ""
    reason: str


class BoardServed(EventBase):
    """The run's board answers over HTTP at `url`; its token is in `address_file` (mode 0600),
    never in the log."""

    type: Literal["board_served"] = "board_served"
    url: str
    address_file: str


class HarnessStarted(EventBase):
    """A harness agent's program started in its workspace (`swarmflow.harnesses`)."""

    type: Literal["harness_started"] = "harness_started"
    harness: str
    program: str
    """The program's name (its arguments may hold the prompt; they are not recorded)."""
    sandboxed: bool
    """Under bubblewrap, reaching only the run's endpoints; False: on the host."""
    endpoint: str
    """The metering endpoint's base URL, as the program sees it."""
    board: bool = False


class HarnessEnded(EventBase):
    """A harness agent's program ended, and with it every process it started."""

    type: Literal["harness_ended"] = "harness_ended"
    harness: str
    reason: str
    """The session's end reason (completed, budget exhausted before model call, wall clock,
    cancelled, error ...)."""
    exit_code: int | None = None
    """None when it was killed (timeout, allowance, cancellation)."""
    seconds: float = 0.0
    calls: int = 0
    tokens: int = 0
    refusals: dict[str, int] = {}
    """Requests the endpoint turned away, by kind."""
    stderr: str = ""
    """The tail of what the program wrote on stderr."""


class HarnessRefused(EventBase):
    """The metering endpoint turned a harness's request away (the first of each kind in a
    call is recorded, every one counted in `harness_ended`); what it asked was not sent."""

    type: Literal["harness_refused"] = "harness_refused"
    harness: str
    kind: str
    """budget, step_limit, loop_block, handoff, rail, body_too_large, connections, timeouts,
    bad_request, unauthorized, not_found, model_error or ended."""
    status: int = 0
    reason: str


class HarnessToolExecuted(EventBase):
    """A tool call a harness's program ran: the call its model answered with, and the result
    the program fed back in its next request (`fed_back` False: the program ended, or went
    on, without sending one)."""

    type: Literal["harness_tool_executed"] = "harness_tool_executed"
    harness: str
    tool: str
    call_id: str = ""
    arguments: dict[str, object] | str = {}
    result: str = ""
    """The result as the program sent it, cut to 2,000 characters."""
    fed_back: bool = True
    step: int = 0
    """The model call that asked for it."""
    duration: float = 0.0
    """Seconds from the answer to the request that carried the result."""


class HarnessAnswered(EventBase):
    """The text the model answered a harness's program with at one step (recorded when it
    said something; its tool calls follow as `harness_tool_executed`)."""

    type: Literal["harness_answered"] = "harness_answered"
    harness: str
    step: int = 0
    """The model call that answered."""
    text: str = ""
    """The answer's text, cut to 2,000 characters."""
    tool_calls: list[str] = []
    """The tools the answer called, by name."""


class BranchFinished(EventBase):
    type: Literal["branch_finished"] = "branch_finished"
    outcome: Literal["ok", "failed", "cancelled", "empty"]
    error: str | None = None


class OutcomesCompacted(EventBase):
    type: Literal["outcomes_compacted"] = "outcomes_compacted"
    kept: int
    dropped: list[dict[str, object]] = []


class EventOversized(EventBase):
    """An event whose line was over the readers' cap (`record.oversized`): written cut, just
    before this one (`cut`), or not written, this one in its place."""

    type: Literal["event_oversized"] = "event_oversized"
    event: str
    """The oversized event's type."""
    size: int
    """Its line's bytes as it would have been written."""
    cap: int
    cut: bool


class TeamEnded(EventBase):
    """A Team run (`team(...)`) ended; `agent` is its lead."""

    type: Literal["team_ended"] = "team_ended"
    reason: str
    roles: list[str] = []
    failed: list[str] = []
    """Roles whose session crashed (ended in error)."""
    messages: int = 0
    answer: str = ""


Event = Annotated[
    RunStarted
    | RunFinished
    | OperatorStarted
    | OperatorFinished
    | SessionStarted
    | ModelCalled
    | ModelRetried
    | EndpointProbed
    | ToolExecuted
    | ToolRefused
    | MessageSent
    | MessageRefused
    | HandoffRefused
    | SpawnRefused
    | AgentFinished
    | SessionTold
    | SessionEnded
    | ContextCompacted
    | ContextLevelRefused
    | ExperienceRetrieved
    | ExperienceWritten
    | ExperienceRefused
    | RailVetoed
    | GoalEvaluated
    | WorkspaceChanged
    | SharedFileWritten
    | EvidenceDelivered
    | DiagnosticsPosted
    | FeedbackChecked
    | FeedbackUnavailable
    | WorkspaceInvalidated
    | CommandsMissed
    | FileReserved
    | ReservationRefused
    | SandboxUnavailable
    | PatchApplied
    | HumanRequested
    | HumanAnswered
    | RunResumed
    | CallReplayed
    | ResumeDivergedAt
    | BranchFinished
    | HarnessStarted
    | HarnessEnded
    | HarnessRefused
    | HarnessToolExecuted
    | OutcomesCompacted
    | ThreadCreated
    | BoardMessagePosted
    | MentionDelivered
    | BoardRefused
    | BoardServed
    | TeamEnded
    | OutputModeSteppedDown
    | CacheBust
    | HarnessAnswered
    | EventOversized,
    Field(discriminator="type"),
]

_ADAPTER: TypeAdapter[Event] | None = None


def event_adapter() -> TypeAdapter[Event]:
    """The union's validator, built on first use to keep import cheap."""
    global _ADAPTER
    if _ADAPTER is None:
        _ADAPTER = TypeAdapter(Event)
    return _ADAPTER


def parse_event(line: str | bytes) -> EventBase:
    """Parse one JSONL line back into its event model.

    A line that holds a lone surrogate (`core.jsonline` escapes text that is not UTF-8 so) is
    read with Python's JSON parser: pydantic's refuses such an escape. A line that is not an
    event raises `ValidationError` or `ValueError`; so does one nested deeper than
    `MAX_NESTING` (pydantic's parser stops there, and an event read must be writable again).
    """
    try:
        event: EventBase = event_adapter().validate_json(line)
    except ValidationError as exc:
        error = exc.errors()[0]
        if error["type"] != "json_invalid" or "recursion limit" in str(error.get("ctx")):
            raise
        try:
            data = json.loads(line)
            deep = not _nested_within(data, MAX_NESTING)
        except RecursionError:
            deep = True
        if deep:
            raise ValueError("the line is nested too deeply to be an event") from None
        event = event_adapter().validate_python(data)
    return event


MAX_NESTING = 200
"""The deepest nesting of lists and objects an event line may have (pydantic's JSON parser
reads no deeper; its serializer writes 255 levels)."""


def _nested_within(data: object, limit: int) -> bool:
    """Whether `data` nests lists and dicts at most `limit` deep (level by level, no
    recursion)."""
    level, items = 0, [data]
    while items := [i for i in items if isinstance(i, dict | list)]:
        level += 1
        if level > limit:
            return False
        items = [v for i in items for v in (i.values() if isinstance(i, dict) else i)]
    return True
