"""A scripted policy (no LLM) that plays the four agents through the five-phase protocol.

It is a stand-in for a model, for running the example offline and in tests: every tool call
it makes is real (the repository is really listed and read, the board really carries the
messages), and every reply depends only on what the agent's context holds. Its runs are
labelled `team-qa-scripted` in reports.

Messages carry a phase tag, `[P1 explore]` from the assembler and `[P1 finding agent2]` from a
member, so the assembler can count approvals and a member can tell which phase it is in.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from swarmflow.core.messages import Message, ModelRequest, ToolCall
from swarmflow.testing import FunctionModel, tool_call

MODEL_NAME = "team-qa-scripted"
ASSEMBLER = "agent1"
MEMBERS = ("agent2", "agent3", "agent4")
PATTERNS = {"agent2": "*.py", "agent3": "*.md", "agent4": "*test*"}
"""What each member looks at first, so that the explorations differ."""

Reply = str | ToolCall


@dataclass(frozen=True)
class Phase:
    number: int
    thread: str
    verb: str
    """The assembler's tag: `[P2 plan]`."""
    answer: str
    """The members' tag: `[P2 approve agent3]`."""


PHASES = (
    Phase(1, "findings", "explore", "finding"),
    Phase(2, "plan", "plan", "approve"),
    Phase(3, "worklog", "execute", "result"),
    Phase(4, "plan", "review", "approve"),
    Phase(5, "final", "draft", "approve"),
)


def scripted_model(listen: str = "passive") -> FunctionModel:
    """The policy for a team listening `listen`: a blocking assembler waits with a tool call,
    a passive one ends its turn and is woken by the next mention."""

    def policy(request: ModelRequest) -> Reply:
        if request.agent == ASSEMBLER:
            return _assembler(request, blocking=listen == "blocking")
        return _member(request)

    return FunctionModel(policy, name=MODEL_NAME)


# -- reading a context ----------------------------------------------------------------------


def _heard(messages: list[Message]) -> str:
    """Everything the agent was told: the task, mentions, tool results (not its own words)."""
    return "\n".join(m.content or "" for m in messages if m.role in ("user", "tool"))


def _calls(messages: list[Message], name: str) -> list[dict[str, object]]:
    """The arguments of every call of tool `name` the agent made."""
    found = []
    for m in messages:
        for call in m.tool_calls if m.role == "assistant" else ():
            if call.name == name:
                found.append(json.loads(call.arguments or "{}"))
    return found


def _replies(heard: str, phase: Phase) -> dict[str, str]:
    """Member -> what it said, for the members' tag of `phase`."""
    pattern = rf"\[P{phase.number} {phase.answer} (agent\d)\] ?([^\n]*)"
    return {who: said for who, said in re.findall(pattern, heard)}


# -- the assembler --------------------------------------------------------------------------


def _assembler(request: ModelRequest, *, blocking: bool) -> Reply:
    messages = list(request.messages)
    heard = _heard(messages)
    question = next((m.content or "" for m in messages if m.role == "user"), "")
    created = {str(c["name"]) for c in _calls(messages, "create_thread")}
    posted = " ".join(str(c["content"]) for c in _calls(messages, "send_message"))
    for phase in PHASES:
        if phase.thread not in created:
            return tool_call("create_thread", name=phase.thread, participants=list(MEMBERS))
        if f"[P{phase.number} {phase.verb}]" not in posted:
            text = f"[P{phase.number} {phase.verb}] {_brief(phase, question, heard)}"
            return tool_call("send_message", thread=phase.thread, content=text,
                             mentions=list(MEMBERS))  # fmt: skip
        if len(_replies(heard, phase)) < len(MEMBERS):
            if blocking:
                return tool_call("wait_for_mention", timeout=120)
            return f"Waiting for every approval of phase {phase.number}."
    return tool_call("submit", summary=_answer(question, heard))


def _brief(phase: Phase, question: str, heard: str) -> str:
    if phase.number == 1:
        return f"Question: {question} Explore the repository and post your findings, @agent1."
    if phase.number == 2:
        return _plan(heard) + " Approve the plan, @agent1."
    if phase.number == 3:
        return "Work your part; log what you find in this thread the moment you find it."
    if phase.number == 4:
        results = _replies(heard, PHASES[2])
        shown = "; ".join(f"{who}: {said}" for who, said in sorted(results.items()))
        return f"Results for review: {shown}. Approve if they answer the question."
    return _answer(question, heard) + " Approve this final answer, @agent1."


def _plan(heard: str) -> str:
    """Each member reads the first file it found (or the first anyone found)."""
    found = _replies(heard, PHASES[0])
    every = [f for said in found.values() for f in _files_in(said)]
    parts = []
    for who in MEMBERS:
        own = _files_in(found.get(who, ""))
        target = own[0] if own else (every[0] if every else "README.md")
        parts.append(f"{who} reads `{target}`")
    return "; ".join(parts) + "."


def _files_in(said: str) -> list[str]:
    match = re.search(r"files: (.*)", said)
    if match is None or match.group(1).strip() == "none":
        return []
    return [f.strip() for f in match.group(1).split(",") if f.strip()]


def _answer(question: str, heard: str) -> str:
    results = _replies(heard, PHASES[2])
    shown = "; ".join(f"{said} (from {who})" for who, said in sorted(results.items()))
    return f"Answer to {question!r}: {shown}"


# -- a member -------------------------------------------------------------------------------


def _member(request: ModelRequest) -> Reply:
    messages = list(request.messages)
    last = messages[-1]
    if last.role == "user" and "unread mention" in (last.content or ""):
        return tool_call("wait_for_mention", timeout=120)  # blocking: listening is a step
    heard = _heard(messages)
    current = max((p for p in PHASES if f"[P{p.number} {p.verb}]" in heard),
                  key=lambda p: p.number, default=None)  # fmt: skip
    me = request.agent
    posted = " ".join(str(c["content"]) for c in _calls(messages, "send_message"))
    if current is None or f"[P{current.number} {current.answer} {me}]" in posted:
        return "Done with this phase; waiting for the assembler."
    return _act(current, me, messages, heard)


def _act(phase: Phase, me: str, messages: list[Message], heard: str) -> Reply:
    tag = f"[P{phase.number} {phase.answer} {me}]"
    if phase.number == 1:
        listed = _calls(messages, "list_files")
        if not listed:
            return tool_call("list_files", path=".", pattern=PATTERNS[me])
        text = f"{tag} files: {_listing(messages)}"
    elif phase.number == 3:
        target = _assigned(heard, me)
        if not _calls(messages, "read_file"):
            return tool_call("read_file", path=target, limit=40)
        text = f"{tag} {target}: {_first_line(messages)}"
    else:
        text = tag
    return tool_call("send_message", thread=phase.thread, content=text, mentions=[ASSEMBLER])


def _listing(messages: list[Message]) -> str:
    out = _last_result(messages)
    if out.startswith("no files"):
        return "none"
    return ", ".join(line.strip() for line in out.splitlines()[:5] if line.strip())


def _assigned(heard: str, me: str) -> str:
    match = re.search(rf"{me} reads `([^`]+)`", heard)
    return match.group(1) if match else "README.md"


def _first_line(messages: list[Message]) -> str:
    """The first line of code or text the file shows (past the line numbers)."""
    for line in _last_result(messages).splitlines():
        text = line.split("\t", 1)[-1].strip()
        if text and not text.startswith(('"""', "#")):
            return text[:120]
    return "(nothing to read)"


def _last_result(messages: list[Message]) -> str:
    return next((m.content or "" for m in reversed(messages) if m.role == "tool"), "")
