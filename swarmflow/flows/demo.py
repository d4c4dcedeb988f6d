"""The demo policy: a scripted stand-in for the model that drives real tool calls.

It plays every role of the parallel-coder flow on the demo target (`target_repo`), reading what
the tools really returned. Coder 0 finds the bug, fixes it and runs the tests; coder 1 makes a
wrong fix, sees the tests fail and submits anyway; coder 2 reads the code and gives up. Reviewers
run the tests in the candidate's worktree and report what happened; the arbiter picks from the
reviews it was sent. It is deterministic: which coder is which comes from the role card.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from swarmflow.core.messages import ModelRequest, ToolCall
from swarmflow.flows.target_repo import BUGGY_LINE, default_test_command
from swarmflow.report.candidates import tally_line
from swarmflow.report.text import DEMO_MODEL
from swarmflow.testing import FunctionModel, tool_call

BANNER = "model: demo (scripted policy, no LLM)"

Reply = str | ToolCall

_CODER = re.compile(r"You are coder (\d+) of (\d+)")
_TEST_COMMAND = re.compile(r"Test command: `([^`]+)`")
_EXIT = re.compile(r"^exit code: (-?\d+)", re.MULTILINE)
_NUMBERED = re.compile(r"^\s*\d+\t", re.MULTILINE)
_CANDIDATE = re.compile(r"^Candidate (\d+):")
_PASSED = re.compile(r'"passed"\s*:\s*(true|false)')

TARGET_FILE = "calc/stats.py"
GOOD_FIX = (
    "    if len(ordered) % 2 == 0:\n"
    "        return (ordered[mid - 1] + ordered[mid]) / 2\n"
    "    return ordered[mid]"
)
WRONG_FIX = "    return (ordered[mid - 1] + ordered[mid]) / 2"
GOOD_SUMMARY = (
    "Fixed median() for an even number of values: it now averages the two middle values "
    "instead of returning the upper one. Test run: {tests}."
)
WRONG_SUMMARY = (
    "Made median() always average the two middle positions. My own run still reports "
    "{tests}, but I am submitting this version anyway."
)


def _briefing(request: ModelRequest) -> str:
    """The card and the first user messages: a card's session-specific part (which coder this
    is) follows the task (`sessions.layout`)."""
    head = [m.content or "" for m in request.messages[:4] if m.role in ("system", "user")]
    return "\n".join(head)


def demo_model() -> FunctionModel:
    """The scripted demo model, named so that every summary labels it as scripted."""
    return FunctionModel(policy, name=DEMO_MODEL)


def policy(request: ModelRequest) -> Reply:
    """The next reply for whichever agent asks."""
    role = _ROLES.get(request.agent)
    if role is None:
        return f"(the demo policy has no part for agent {request.agent!r})"
    return role(request)


@dataclass(frozen=True, slots=True)
class Done:
    """A tool call this session made and what it returned."""

    name: str
    args: dict[str, Any]
    result: str


def history(request: ModelRequest) -> list[Done]:
    """The session's tool calls so far, each with its result, oldest first."""
    calls = {c.id: c for m in request.messages if m.role == "assistant" for c in m.tool_calls}
    done = []
    for m in request.messages:
        call = calls.get(m.tool_call_id or "") if m.role == "tool" else None
        if call is not None:
            done.append(Done(call.name, call.parsed_arguments(), m.content or ""))
    return done


def _test_command(request: ModelRequest) -> str:
    """The test command the role card names, else the demo target's."""
    found = _TEST_COMMAND.search(_briefing(request))
    return found.group(1) if found else default_test_command()


def _exit_code(output: str) -> int | None:
    """The exit code `run_shell` reported, if any."""
    found = _EXIT.search(output)
    return int(found.group(1)) if found else None


# -- coders -------------------------------------------------------------------------------------


def _coder(request: ModelRequest) -> Reply:
    """Coder n plays plan n mod 3: correct fix, wrong fix, give up."""
    found = _CODER.search(_briefing(request))
    index = int(found.group(1)) if found else 0
    plan = _PLANS[index % len(_PLANS)]
    return plan(history(request), _test_command(request))


def _correct(done: list[Done], command: str) -> Reply:
    """Search, read, fix, test, submit."""
    if not done:
        return tool_call("search", pattern=r"def median", glob="*.py")
    if len(done) == 1:
        return tool_call("read_file", path=_found_path(done[0].result))
    return _fix_and_submit(done[1:], GOOD_FIX, GOOD_SUMMARY, command)


def _wrong(done: list[Done], command: str) -> Reply:
    """Read, make a plausible but wrong fix, see the tests fail, submit anyway."""
    if not done:
        return tool_call("read_file", path=TARGET_FILE)
    return _fix_and_submit(done, WRONG_FIX, WRONG_SUMMARY, command)


def _fix_and_submit(done: list[Done], fix: str, summary: str, command: str) -> Reply:
    """After reading a file (`done[0]`): edit in `fix`, run the tests, and submit `summary`
    with their tally; give up when the file read has no buggy line to replace."""
    step = len(done)
    if step == 1:
        return _edit(done[0], fix) or _give_up(done[0].args.get("path", TARGET_FILE))
    if step == 2:
        return tool_call("run_shell", command=command)
    if step == 3:
        return tool_call("submit", summary=summary.format(tests=tally_line(done[2].result)))
    return "Submitted."


def _empty(done: list[Done], command: str) -> Reply:
    """Look around, read the code, and give up without editing anything."""
    step = len(done)
    if step == 0:
        return tool_call("list_files", path=".", pattern="*.py")
    if step == 1:
        return tool_call("read_file", path=_listed(done[0].result))
    return _give_up(done[1].args.get("path", TARGET_FILE))


_PLANS: list[Callable[[list[Done], str], Reply]] = [_correct, _wrong, _empty]


def _found_path(search_output: str) -> str:
    """The file of the first `file:line: text` match, else the demo's file."""
    first = search_output.split(":", 1)[0].strip()
    return first if first.endswith(".py") else TARGET_FILE


def _listed(listing: str) -> str:
    """The demo's file when the listing shows it, else the first Python file listed."""
    names = [n.strip() for n in listing.splitlines() if n.strip().endswith(".py")]
    return TARGET_FILE if TARGET_FILE in names or not names else names[0]


def _edit(read: Done, new: str) -> ToolCall | None:
    """An edit replacing the buggy line, if the file that was read has it."""
    text = _NUMBERED.sub("", read.result)
    old = BUGGY_LINE.rstrip("\n")
    if text.count(old) != 1:
        return None
    return tool_call("edit", path=str(read.args.get("path", TARGET_FILE)), old=old, new=new)


def _give_up(path: object) -> str:
    """A coder's final answer when it will not change the code."""
    return (
        f"I read {path} but could not pin down a fix I trust, so I am leaving the code "
        "unchanged rather than guessing."
    )


# -- reviewers ----------------------------------------------------------------------------------


def _reviewer(request: ModelRequest) -> Reply:
    """Run the tests in the candidate's worktree, then report what they said as JSON."""
    shells = [d for d in history(request) if d.name == "run_shell"]
    if not shells:
        return tool_call("run_shell", command=_test_command(request))
    output = shells[-1].result
    code = _exit_code(output)
    notes = f"ran the test command in the candidate's worktree; exit code {code}"
    return json.dumps({"passed": code == 0, "tests": tally_line(output), "notes": notes})


# -- the arbiter --------------------------------------------------------------------------------


def _arbiter(request: ModelRequest) -> Reply:
    """Acknowledge each review; when asked for the verdict, pick from the reviews."""
    if "JSON schema" not in request.prompt:
        found = _CANDIDATE.match(request.prompt)
        return f"Noted candidate {found.group(1) if found else '?'}."
    return json.dumps(_verdict(_reviews(request)))


def _reviews(request: ModelRequest) -> dict[int, bool]:
    """Whether each candidate's tests passed, from the review messages received."""
    seen: dict[int, bool] = {}
    for m in request.messages:
        head = _CANDIDATE.match(m.content or "") if m.role == "user" else None
        if head is not None:
            verdicts = _PASSED.findall(m.content or "")
            seen[int(head.group(1))] = bool(verdicts) and verdicts[-1] == "true"
    return seen


def _verdict(reviews: dict[int, bool]) -> dict[str, object]:
    """Choice and confidence from the real review results."""
    passing = sorted(i for i, ok in reviews.items() if ok)
    if len(passing) == 1:
        reason = (
            f"Only candidate {passing[0]} passes its tests, out of {len(reviews)} "
            "reviewed candidates."
        )
        return {"choice": passing[0], "confidence": 0.9, "reason": reason}
    if passing:
        reason = f"{len(passing)} candidates pass; taking the first, but they should be compared."
        return {"choice": passing[0], "confidence": round(0.9 / len(passing), 2), "reason": reason}
    reason = f"None of the {len(reviews)} reviewed candidates passes its tests."
    return {"choice": None, "confidence": 0.3, "reason": reason}


_ROLES: dict[str, Callable[[ModelRequest], Reply]] = {
    "coder": _coder,
    "reviewer": _reviewer,
    "arbiter": _arbiter,
}
