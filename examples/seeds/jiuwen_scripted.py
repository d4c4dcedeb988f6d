"""The offline coder of `jiuwen_mechanisms.py` (a script, not a model; reports label it).

Its tool calls are real, and what it does depends on what the mechanisms give it:

- it reads the project's long log first (a large observation: the context processors offload
  it once the request passes their watermark, so later calls carry a note instead);
- its first edit has a slip in it (a name that does not exist) unless the experience notes in
  its card tell it to check its names; language-server feedback then shows it the slip
  (F821) at its next step and it fixes it; without feedback it never sees the slip;
- asked to reflect at the end of a run, it writes the note that would have spared the slip.
"""

from __future__ import annotations

from typing import Any

from swarmflow.core.messages import ModelRequest
from swarmflow.experience.reflect import REFLECT_PROMPT
from swarmflow.testing import FunctionModel, tool_call

FIXES = {
    # a word of the issue -> (file, old text, the slip, the fix)
    "mean()": ("calc/stats.py", "(len(xs) + 1)", "len(xz)", "len(xs)"),
    "spread()": ("calc/stats.py", "max(xs) - max(xs)", "max(xs) - min(xz)", "max(xs) - min(xs)"),
    "shout()": ("calc/text.py", "s.lower()", "t.upper()", "s.upper()"),
}
NOTE = "worked: after an edit, check every name the new code uses (an F821 slipped in before)"
CAREFUL = "check every name"


def coder_model() -> FunctionModel:
    def policy(request: ModelRequest) -> Any:
        if request.system == REFLECT_PROMPT:
            return NOTE
        messages = list(request.messages)
        prompt = next((m.content or "" for m in messages if m.role == "user"), "")
        path, old, slip, fix = next(v for k, v in FIXES.items() if k in prompt)
        done = [m for m in messages if m.role == "tool"]
        if not done:
            return tool_call("read_file", path="data/project.log")
        if len(done) == 1:
            return tool_call("read_file", path=path)
        if len(done) == 2:
            careful = CAREFUL in request.system
            return tool_call("edit", path=path, old=old, new=fix if careful else slip)
        told = "\n".join(m.content or "" for m in messages[-2:] if m.role == "user")
        if "F821" in told and slip in _edits(messages):
            return tool_call("edit", path=path, old=slip, new=fix)
        return f"done: edited {path}"

    return FunctionModel(policy, name="jiuwen-scripted")


def _edits(messages: list[Any]) -> str:
    return " ".join(c.arguments or "" for m in messages if m.role == "assistant"
                    for c in m.tool_calls if c.name == "edit")  # fmt: skip
