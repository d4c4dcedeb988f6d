"""The offline policies of `agentradio_ladder.py` (scripts, not models; reports label them).

Every tool call they make is real: the repository is listed and read, the board carries the
messages. What differs by arm is what the organization lets them do:

- a single agent (B0, and each of B1's candidates) lists the repository and reads the first
  one, two or three files, a depth drawn per attempt (its first reply says which), so its
  independent attempts differ as a sampled model's would;
- L1's members each read the first file matching their own pattern and report it; the
  assembler answers from the reports as they come (no negotiation, no review);
- L2 and L3 are the team of `examples/team_repo_qa` (its `qa_scripted` policy), under
  blocking receive and passive awareness.
"""

from __future__ import annotations

import random
import re
from typing import Any

from swarmflow.core.messages import Message, ModelRequest
from swarmflow.testing import FunctionModel, Step, tool_call

DEPTH = re.compile(r"I will read (\d) files")


def first_line(listing: str) -> str:
    """The first line of code or text a `read_file` result shows (past the line numbers)."""
    for line in listing.splitlines():
        text = line.split("\t", 1)[-1].strip()
        if text and not text.startswith(('"""', "#")):
            return text[:120]
    return "(nothing to read)"


def _tool_results(messages: list[Message]) -> list[str]:
    return [m.content or "" for m in messages if m.role == "tool"]


def solo_model() -> FunctionModel:
    """One agent answering alone; each attempt on a question reads 1 to 3 files, drawn from
    a generator seeded by the question and the attempt's number (repeatable, and different
    between independent attempts)."""
    attempts: dict[str, int] = {}

    def policy(request: ModelRequest) -> Any:
        messages = list(request.messages)
        question = next((m.content or "" for m in messages if m.role == "user"), "")
        results = _tool_results(messages)
        if not results:
            attempts[question] = attempts.get(question, 0) + 1
            depth = random.Random(f"{question} {attempts[question]}").randint(1, 3)
            return Step(f"I will read {depth} files.", [tool_call("list_files", path=".")])
        said = " ".join(m.content or "" for m in messages if m.role == "assistant")
        found = DEPTH.search(said)
        depth = int(found.group(1)) if found else 1
        files = [f for f in results[0].splitlines() if f.strip()]
        read = results[1:]
        if len(read) < min(depth, len(files)):
            return tool_call("read_file", path=files[len(read)], limit=40)
        return "Answer: " + "; ".join(first_line(r) for r in read)

    return FunctionModel(policy, name="ladder-scripted")


PATTERNS = {"agent2": "*.py", "agent3": "*.md", "agent4": "*test*"}


def divided_model() -> FunctionModel:
    """L1: each member reads the first file of its pattern; the assembler joins the reports."""

    def policy(request: ModelRequest) -> Any:
        messages = list(request.messages)
        if request.agent == "agent1":
            reports = re.findall(r"^- (.*)$", request.prompt, flags=re.MULTILINE)
            return "Answer: " + "; ".join(reports)
        results = _tool_results(messages)
        if not results:
            return tool_call("list_files", path=".", pattern=PATTERNS[request.agent])
        files = [f for f in results[0].splitlines() if f.strip() and not f.startswith("no files")]
        if len(results) == 1 and files:
            return tool_call("read_file", path=files[0], limit=40)
        return f"{files[0]}: {first_line(results[-1])}" if files else "nothing found"

    return FunctionModel(policy, name="ladder-scripted")
