"""Scripted policies (no LLM) for running the example offline with `--demo`.

They are stand-ins for a model, labelled `experiment-scripted` in every report: every tool
call they make is real (the file is really read and edited, the tests really run), but what
they decide is drawn from a hash of the task, the run and the role card, so it varies per
task and repeat the way a model's choices do, and the same run draws the same again:

- a Coder fixes the bug (70%), types a wrong fix that breaks another test (15%), or leaves
  the code as it is (15%);
- the Adopter delegates to the Coders (under the optional card 45%, and then to both only
  60% of the time; under the mandatory card 90%, to both), does the work itself, or (12%)
  keeps exploring until its token allowance stops it before it delegated: an unverified run.

The fixes come from the suite's own table (`ablation_suite.BUGS`): that is how a script
"knows" them.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ablation_suite import TEST_COMMAND, bug

from swarmflow.core.messages import Message, ModelRequest, ToolCall
from swarmflow.testing import FunctionModel, tool_call

MODEL_NAME = "experiment-scripted"
TAG = re.compile(r"\[task (\S+) run (\d+)\]")
MANDATORY = "not asking you to decide"
Reply = str | ToolCall


def draw(*parts: object) -> float:
    """A number in [0, 1) that depends only on `parts`."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _tag(messages: list[Message]) -> tuple[str, int]:
    for m in messages:
        found = TAG.search(m.content or "") if m.role == "user" else None
        if found:
            return found.group(1), int(found.group(2))
    raise AssertionError("the scripted policy needs a `[task ID run N]` tag in its task")


def _calls(messages: list[Message], name: str) -> list[dict[str, Any]]:
    return [json.loads(c.arguments or "{}") for m in messages if m.role == "assistant"
            for c in m.tool_calls if c.name == name]  # fmt: skip


def _last_result(messages: list[Message]) -> str:
    return next((m.content or "" for m in reversed(messages) if m.role == "tool"), "")


def coder_step(request: ModelRequest, *, submit: bool) -> Reply:
    """One step of a Coder: read, edit (or not), run the tests, say how they went."""
    messages = list(request.messages)
    task, run = _tag(messages)
    b = bug(task)
    if not _calls(messages, "read_file"):
        return tool_call("read_file", path=b.path)
    if not _calls(messages, "edit") and not _calls(messages, "run_shell"):
        u = draw(task, run, request.agent, request.system[-120:])
        if b.buggy.strip() in _last_result(messages) and u < 0.85:
            return tool_call("edit", path=b.path, old=b.buggy, new=b.fixed if u < 0.7 else b.broken)
    if not _calls(messages, "run_shell"):
        return tool_call("run_shell", command=TEST_COMMAND)
    tests = _last_result(messages)
    verdict = "tests pass" if " passed" in tests and "failed" not in tests else "tests fail"
    line = f"Worked on {b.path}: {verdict}."
    return tool_call("submit", summary=line) if submit else line


def adopter_step(request: ModelRequest) -> Reply:
    """One step of the Adopter: explore too long, delegate, or do the work itself."""
    messages = list(request.messages)
    task, run = _tag(messages)
    mandatory = MANDATORY in request.system
    u = draw(task, run, "adopter", mandatory)
    delegate = 0.90 if mandatory else 0.45
    if u < 0.12:  # keeps reading, a new part each time, until its allowance stops it
        return tool_call("read_file", path=bug(task).path, offset=len(messages), limit=40)
    if u >= 0.12 + delegate:
        return coder_step(request, submit=True)
    both = mandatory or draw(task, run, "second brief") < 0.6
    sent = [c["to"] for c in _calls(messages, "message_agent")]
    issue = next(m.content or "" for m in messages if m.role == "user")
    for coder in ("coder_a", "coder_b") if both else ("coder_a",):
        if coder not in sent:
            return tool_call("message_agent", to=coder, text=issue)
    return tool_call("submit", summary=f"Delegated to {', '.join(sent)}: {_last_result(messages)}")


def single_policy() -> FunctionModel:
    return FunctionModel(lambda r: coder_step(r, submit=True), name=MODEL_NAME)


def duo_policy() -> FunctionModel:
    return FunctionModel(lambda r: coder_step(r, submit=True), name=MODEL_NAME)


def team_policy() -> FunctionModel:
    def policy(request: ModelRequest) -> Reply:
        if request.agent == "adopter":
            return adopter_step(request)
        return coder_step(request, submit=False)

    return FunctionModel(policy, name=MODEL_NAME)
