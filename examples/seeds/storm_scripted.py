"""The offline coder of `storm_workspaces.py` (a script, not a model; reports label it).

It does what the brief asks, with real tool calls: reads the shared interface and adds the
method to it unless it is there already, then implements the method in each module of its
part. In one shared workspace a write over a file another coder changed since this one read
it is refused (STORM's version check); the coder then reads the file again and finds the
method there. In a worktree it never sees the others' changes: each coder's patch adds the
method again, and the merge at the end keeps what still applies.
"""

from __future__ import annotations

import json
import re
from typing import Any

from swarmflow.core.messages import Message, ModelRequest
from swarmflow.testing import FunctionModel, tool_call

NUMBERED = re.compile(r"^ *\d+\t(.*)$")


def _history(messages: list[Message]) -> list[tuple[str, dict[str, Any], str]]:
    """Every tool call this session made: (tool, arguments, what it answered)."""
    answers = {m.tool_call_id: m.content or "" for m in messages if m.role == "tool"}
    out = []
    for m in messages:
        for call in m.tool_calls if m.role == "assistant" else ():
            out.append((call.name, json.loads(call.arguments or "{}"), answers.get(call.id, "")))
    return out


def _content(answer: str) -> str:
    lines = [found.group(1) for line in answer.splitlines() if (found := NUMBERED.match(line))]
    return "\n".join(lines) + "\n" if lines else ""


def _refused(answer: str) -> bool:
    return "refused" in answer or answer.startswith("error")


def _brief(prompt: str) -> tuple[str, str, dict[str, str]]:
    """The interface file, the method, and each module of this coder's part -> its body."""
    interface = re.search(r"interface in (\S+\.py)", prompt)
    method = re.search(r"Add `(\w+)\(\)`", prompt)
    part = re.search(r"Your part: ([^\n]*)", prompt)
    bodies = dict(re.findall(r"(\S+\.py): (return [^;\n]+)", prompt))
    mine = [p.strip() for p in part.group(1).split(",")] if part else list(bodies)
    return (interface.group(1) if interface else "", method.group(1) if method else "",
            {f: bodies[f] for f in mine if f in bodies})  # fmt: skip


def _next(history: list[tuple[str, dict[str, Any], str]], path: str, goal: Any) -> Any:
    """The next call for one file: read it, then write `goal(content)` (None: nothing to do);
    after a refused write, read it again first."""
    mine = [(tool, answer) for tool, args, answer in history if args.get("path") == path]
    if any(tool == "write_file" and not _refused(answer) for tool, answer in mine):
        return None
    if not mine or mine[-1][0] == "write_file":  # never read, or the write was refused
        return tool_call("read_file", path=path)
    content = _content(mine[-1][1])
    new = goal(content)
    return None if new is None or new == content else tool_call("write_file", path=path,
                                                                  content=new)  # fmt: skip


def coder_model() -> FunctionModel:
    def policy(request: ModelRequest) -> Any:
        messages = list(request.messages)
        prompt = next((m.content or "" for m in messages if m.role == "user"), "")
        interface, method, part = _brief(prompt)
        history = _history(messages)
        # The shared interface gains the method first, as an abstract declaration in the
        # task's own code; each part then implements it.
        stub = f"\n    def {method}(self):\n        raise NotImplementedError\n"
        steps = [(interface, lambda c: None if f"def {method}(" in c else c + stub)]
        for path, body in part.items():
            impl = f"    def {method}(self):\n        {body}\n"
            steps.append((path, lambda c, impl=impl: c.replace("    pass\n", impl)))
        for path, goal in steps:
            call = _next(history, path, goal)
            if call is not None:
                return call
        return f"done: {method}() in {', '.join(part) or 'nothing'}"

    return FunctionModel(policy, name="storm-scripted")
