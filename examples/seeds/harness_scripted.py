"""The offline policies of `cross_harness.py` (scripts, not models; reports label them).

- a native coder reads the file and edits it; on the tasks in `stats.py` its first edit has a
  slip (a name that does not exist) that it does not notice;
- the Duo's reviewer reads the file after the coder and fixes a slip it finds;
- mini-swe-agent's model (its calls arrive through the metering endpoint with mini's own
  `bash` tool) answers with a `sed` command and then mini's completion marker.
"""

from __future__ import annotations

from typing import Any

from jiuwen_scripted import FIXES

from swarmflow.core.messages import ModelRequest
from swarmflow.testing import FunctionModel, tool_call

DONE = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def _fix_of(prompt: str) -> tuple[str, str, str, str]:
    return next((v for k, v in FIXES.items() if k in prompt), FIXES["mean()"])


def _mini(request: ModelRequest, prompt: str) -> Any:
    path, old, _, fix = _fix_of(prompt)
    if not [m for m in request.messages if m.role == "tool"]:
        return tool_call("bash", command=f"sed -i 's/{_sed(old)}/{_sed(fix)}/' {path} && "
                                         f"grep -n '{_sed(fix)}' {path}")  # fmt: skip
    return tool_call("bash", command=f"printf '{DONE}\\nfixed {path}\\n'")


def _sed(text: str) -> str:
    """`text` as a literal in a basic sed expression (its pattern and its replacement)."""
    return "".join("\\" + c if c in "[].*/^$&\\" else c for c in text)


def _coder(request: ModelRequest, prompt: str) -> Any:
    path, old, slip, fix = _fix_of(prompt)
    done = [m for m in request.messages if m.role == "tool"]
    if not done:
        return tool_call("read_file", path=path)
    if len(done) == 1:
        return tool_call("edit", path=path, old=old, new=slip if "stats" in path else fix)
    return f"edited {path}"


def _reviewer(request: ModelRequest, prompt: str) -> Any:
    path, _, slip, fix = _fix_of(prompt)
    done = [m for m in request.messages if m.role == "tool"]
    if not done:
        return tool_call("read_file", path=path)
    if len(done) == 1 and slip in (done[0].content or ""):
        return tool_call("edit", path=path, old=slip, new=fix)
    return f"reviewed {path}"


def harness_model() -> FunctionModel:
    def policy(request: ModelRequest) -> Any:
        prompt = "\n".join(m.content or "" for m in request.messages if m.role == "user")
        if [t.name for t in request.tools] == ["bash"]:
            return _mini(request, prompt)
        if request.agent == "reviewer":
            return _reviewer(request, prompt)
        return _coder(request, prompt)

    return FunctionModel(policy, name="harness-scripted")
