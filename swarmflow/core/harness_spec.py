"""A harness declaration: how an outside agent program does one agent's work (pure data).

`Agent(name, harness=Harness(...))` names it; `swarmflow.harnesses` runs it (docs/harnesses.md).
The command is an argument vector whose items may hold these placeholders:

| placeholder | what it becomes |
|---|---|
| `{task}` | the call's prompt (with `task="argument"`) |
| `{task_file}` | a file holding the prompt (with `task="file"`) |
| `{answer_file}` | where the program writes its answer (with `answer="file"`) |
| `{base_url}` | the metering endpoint's OpenAI-compatible base URL (ends in `/v1`) |
| `{model}` | the model name the program should ask for (`model_name`) |

Other braces are left as they are; an argument that is one unknown placeholder alone
(`{taks}`) is refused as a typo. The endpoint's key is never a placeholder: it is in the
program's environment only (`SWARMFLOW_MODEL_KEY`, `OPENAI_API_KEY`), never on a command
line, so no process listing shows it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from swarmflow.core.environ import EnvPairs

PLACEHOLDERS = frozenset({"task", "task_file", "answer_file", "base_url", "model"})
_FIELD = re.compile(r"\{([a-z_]+)\}")


class Harness(BaseModel):
    """An outside agent program that does an agent's work, run in the agent's workspace."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: tuple[str, ...]
    """The program and its arguments; items may hold the placeholders above."""
    task: Literal["argument", "stdin", "file"] = "argument"
    """How the prompt is given: as `{task}` in the command, on stdin, or in `{task_file}`."""
    answer: Literal["stdout", "file"] = "stdout"
    """Where the final answer is: the program's stdout, or the file at `{answer_file}`."""
    answer_field: str | None = None
    """A dotted path into the answer read as JSON (`info.submission`); None: the whole text."""
    env: EnvPairs = ()
    """Environment variables for the program besides the endpoint's (a mapping is accepted)."""
    timeout: float = Field(default=600.0, gt=0)
    """Seconds the program may run; then it and every process it started are killed."""
    board: bool = False
    """Put `create_thread`, `send_message`, `wait_for_mention` and `watch_mentions` on its PATH,
    talking to the run's board with a token that acts as this agent alone."""
    model_name: str = "swarmflow"
    """The model name the program is told to ask for (`{model}`); the endpoint answers any."""
    name: str = "harness"
    """What the harness is called in events and reports (`mini-swe-agent`, `aider`)."""

    @field_validator("command", mode="before")
    @classmethod
    def _argv(cls, value: object) -> object:
        if isinstance(value, str):
            raise ValueError("command is a list of arguments, not one string")
        return value

    @model_validator(mode="after")
    def _placeholders_fit(self) -> Harness:
        if not self.command or not self.command[0]:
            raise ValueError("command names no program")
        used = {name for item in self.command for name in _FIELD.findall(item)}
        # An argument that is one unknown placeholder is a typo; braces inside a longer
        # argument (inline code, a format string) are the program's own and left alone.
        unknown = sorted({i[1:-1] for i in self.command if _FIELD.fullmatch(i)} - PLACEHOLDERS)
        if unknown:
            raise ValueError(
                f"command holds unknown placeholder {{{unknown[0]}}}; "
                f"known: {', '.join('{' + p + '}' for p in sorted(PLACEHOLDERS))}"
            )
        if self.task == "argument" and "task" not in used:
            raise ValueError('task="argument" needs {task} in the command')
        if self.answer == "file" and "answer_file" not in used:
            raise ValueError('answer="file" needs {answer_file} in the command')
        return self

    def argv(self, values: Mapping[str, str]) -> list[str]:
        """The command with its placeholders filled; other braces are left as they are."""
        return [_fill(item, values) for item in self.command]


def _fill(item: str, values: Mapping[str, str]) -> str:
    return _FIELD.sub(lambda m: values.get(m.group(1), m.group(0)), item)
