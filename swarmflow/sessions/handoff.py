"""The handoff rule: a value from agent A reaches agent B only along the edge A -> B.

Every route into an agent ends in `check_outgoing`, called with the final text the receiver
will see (rendered prompt, rendered card, session message, the question and payload shown to a
person, a `message_agent` text). Three checks run on it:

- provenance, the precise path: agents' outputs, and products the run registered, carry the
  set of agents they came from, followed through containers and models (`core.provenance`);
- renders, for the strings the flow's code builds: an agent's text rendered by an f-string,
  `str.format`, `%` or `str()` is noted with its sources, and a text holding it keeps them
  whatever its length (`core.renders`);
- fingerprints, the safety net: the text itself is matched against every product of every
  agent so far (`core.fingerprint`), whatever route it took (`join`, slices, `.encode()`, case
  changes, quoting).

A refusal sends nothing: it records an event and raises `TopologyError` naming the edge.

Into a model's context, `gate` is the one check every text passes that joins what a model
reads without being sent by the flow: tool results, evidence of every source (the board, a
shared workspace's changes and command log, diagnostics), experience notes, summaries. A
refused text is withheld (replaced by the refusal) and recorded. A harness's whole request
(messages, tools with their descriptions, enums and schemas, `response_format`) goes through
`check_outgoing` at the metering endpoint, answered 403 when refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass, replace
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from pydantic import BaseModel

from swarmflow.core.errors import TopologyError
from swarmflow.core.fingerprint import GivenText
from swarmflow.core.messages import Message
from swarmflow.core.output import AgentOutput
from swarmflow.core.patch import Patch
from swarmflow.core.provenance import collect, source_strings
from swarmflow.record.events import HandoffRefused, MessageRefused
from swarmflow.runtime.context import RunContext, current_scope

if TYPE_CHECKING:
    from swarmflow.sessions.parts import SessionParts

_NOTHING: Any = object()
_MAX_DEPTH = 12


def check_outgoing(
    run: RunContext,
    target: str,
    text: str,
    *,
    via: str,
    values: Any = _NOTHING,
    agent: str | None = None,
) -> None:
    """Refuse (event + `TopologyError`) a send to `target` whose content lacks an edge.

    `text` is what the receiver will be shown; `values`, when given, are the objects it was
    rendered from: their provenance is checked, and their plain rendering (bytes decoded, every
    string inside) is fingerprinted too.
    """
    if type(values) is str and values == text:  # no provenance, and `text` shows it whole
        values = _NOTHING
    tagged = collect(values, run.state.product_sources) if values is not _NOTHING else frozenset()
    if len(run.state.renders):
        tagged |= run.state.renders.sources_in(text)
    for source in sorted(tagged):
        if not run.deps.team.allows(source, target):
            _refuse(run, source, target, via, agent)
    if not len(run.state.fingerprints):
        return
    shown = text if values is _NOTHING else f"{text}\n{shown_text(values)}"
    unreached = run.state.fingerprints.unreached(
        shown, lambda owner: run.deps.team.allows(owner, target)
    )
    if unreached:
        _refuse(run, unreached[0], target, via, agent)


_ROUTED_TOOLS = frozenset(
    {"message_agent", "create_thread", "send_message", "wait_for_mention", "submit"}
)
"""Tools whose results the team's routes already checked (a `message_agent` answer comes back
along the edge it was asked on; the board delivers only along edges) or that echo nothing."""


def gate(run: RunContext, agent: str, text: str, *, via: str) -> str:
    """The handoff gate into `agent`'s context: `text` when it may read it, else the refusal
    (recorded as `handoff_refused` via `via`), saying that what it replaces was withheld."""
    try:
        check_outgoing(run, agent, text, via=via, agent=agent)
    except TopologyError as exc:
        return f"{exc.message}; the {via} was withheld"
    return text


def screen_tool_result(run: RunContext, agent: str, observation: Message) -> Message:
    """`observation` as `agent`'s model may see it: a tool result holding another agent's
    product without an edge to `agent` (a tool of the flow's that hands it over, a file the
    flow wrote it to) is withheld, and the refusal recorded (via "tool result")."""
    if observation.name in _ROUTED_TOOLS or not observation.content:
        return observation
    content = gate(run, agent, observation.content, via="tool result")
    return observation if content is observation.content else replace(observation, content=content)


def screen_history(run: RunContext, agent: str, history: list[Message], via: str) -> list[Message]:
    """`history` read from disk as `agent`'s model may see it: every text and tool call's
    arguments through the gate, so a record rewritten there cannot hand the agent another
    agent's product."""
    screened = []
    for m in history:
        content = gate(run, agent, m.content, via=via) if m.content else m.content
        calls = tuple(
            replace(c, arguments=gate(run, agent, c.arguments, via=via)) for c in m.tool_calls
        )
        screened.append(replace(m, content=content, tool_calls=calls))
    return screened


def sources_of(run: RunContext, values: Any) -> frozenset[str]:
    """The agents behind `values`: declared provenance, plus the agents whose products appear
    in their plain rendering."""
    found = collect(values, run.state.product_sources)
    if len(run.state.renders):
        found |= run.state.renders.sources_in(shown_text(values))
    if len(run.state.fingerprints):
        found = found | run.state.fingerprints.owners(shown_text(values))
    return found


def remember_output(run: RunContext, agent: str, out: AgentOutput, given: GivenText | str) -> None:
    """Fingerprint and tag everything an agent call produced: its text, its structured value
    (as rendered and string by string), its patch and diff. `given`: see `given_to`."""
    sources = out.provenance
    run.state.fingerprints.add(agent, out.text, given)
    if out.value is not None:
        source_strings(out.value, sources)
        run.state.remember_product(out.value, sources)
        run.state.fingerprints.add(agent, shown_text(out.value), given)
    if out.patch is not None:
        run.state.remember_product(out.patch, sources)
        run.state.fingerprints.add(agent, out.patch.diff, given)


def remember_message(run: RunContext, session: SessionParts, text: str) -> None:
    """Fingerprint a `message_agent` text as its sender's product: what the sender relays of
    what it was given is then its own, as it would be in its answer."""
    run.state.fingerprints.add(session.agent.name, text, given_to(session))


class _Taken:
    """How far into one session's history its `GivenText` has read."""

    __slots__ = ("given", "history", "read")

    def __init__(self, session: SessionParts) -> None:
        self.given = GivenText.of(session.system or "")
        self.history: list[Message] = session.history
        self.read = 0


_TAKEN: WeakKeyDictionary[SessionParts, _Taken] = WeakKeyDictionary()
"""Per open session; an entry goes with its session."""


def given_to(session: SessionParts) -> GivenText:
    """What the flow gave the agent (its card and the messages sent to it); tool results are
    not included: a file the agent wrote and read back is still its own product.

    Each message is read once per session: a turn reads only what came after the last one.
    A compaction swaps in a new history list, which is read again from its start.
    """
    taken = _TAKEN.get(session)
    if taken is None or taken.history is not session.history:
        taken = _Taken(session)
        if not session.closed:  # a closed one-call session is asked once
            _TAKEN[session] = taken
    history = session.history
    for message in history[taken.read :]:
        if message.role == "user" and message.content:
            taken.given.extend(message.content)
    taken.read = len(history)
    return taken.given


def shown_text(value: Any) -> str:
    """A plain rendering of `value` that keeps every string inside it readable: what a
    receiver could recover from it, whatever form the prompt renderer gave it."""
    parts: list[str] = []
    _render(value, parts, 0, set())
    return "\n".join(parts)


def _render(value: Any, parts: list[str], depth: int, seen: set[int]) -> None:
    if isinstance(value, str):
        parts.append(value)
        return
    if isinstance(value, bytes | bytearray | memoryview):
        parts.append(bytes(value).decode("utf-8", errors="replace"))
        return
    if value is None or isinstance(value, int | float) or depth > _MAX_DEPTH or id(value) in seen:
        return
    seen.add(id(value))
    children = _children(value)
    if children is None:
        parts.append(str(value))  # an object of the flow's own: what str() gives is what is sent
        return
    for child in children:
        _render(child, parts, depth + 1, seen)


def _children(value: Any) -> list[Any] | None:
    if isinstance(value, AgentOutput):
        return [value.text, value.value, value.patch]
    if isinstance(value, Patch):
        return [value.diff, *value.files]
    if isinstance(value, BaseModel):
        return [value.model_dump_json(), *(getattr(value, n) for n in type(value).model_fields)]
    if isinstance(value, Mapping):
        return [*value.keys(), *value.values()]
    if isinstance(value, list | tuple | set | frozenset):
        return list(value)
    if is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, f.name, None) for f in fields(value)]
    return None


def _refuse(run: RunContext, source: str, target: str, via: str, agent: str | None) -> None:
    declared = sorted(run.deps.team.edges)
    shown = ", ".join(f"{a} -> {b}" for a, b in declared) or "none"
    reason = f"no edge {source} -> {target}"
    record = {
        "agent": agent,
        "branch": current_scope().branch,
        "source": source,
        "target": target,
        "reason": reason,
    }
    # An agent's own message_agent call is a refused message; anything else is a handoff.
    if via == "message_agent":
        run.deps.log.record(MessageRefused, record)
    else:
        run.deps.log.record(HandoffRefused, {**record, "via": via})
    raise TopologyError(
        f"refused to hand a value from {source!r} to {target!r} via {via}: the team declares "
        f"no edge {source} -> {target} (declared edges: {shown})",
        source=source,
        target=target,
        declared=declared,
        agent=agent,
        operator=via,
    )
