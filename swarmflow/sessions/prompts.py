"""The text an agent is sent for a prompt value: strings, agent outputs, models, containers."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from swarmflow.core.output import AgentOutput


def render_prompt(prompt: Any) -> str:
    """The text sent to the model for a prompt value (str, agent output, model, container)."""
    if isinstance(prompt, str):
        return str(prompt)
    if isinstance(prompt, AgentOutput):
        return _describe_output(prompt)
    if isinstance(prompt, BaseModel):
        return prompt.model_dump_json(indent=2)
    if isinstance(prompt, list | tuple):
        return "\n\n".join(render_prompt(p) for p in prompt)
    return json.dumps(prompt, default=str, indent=2) if isinstance(prompt, dict) else str(prompt)


def _describe_output(out: AgentOutput) -> str:
    parts = [f"From {out.agent}:", out.text]
    if out.value is not None:
        parts.append(render_prompt(out.value))
    if out.patch is not None and not out.patch.empty:
        parts.append(f"Patch ({', '.join(out.patch.files)}):\n```diff\n{out.patch.diff}```")
    return "\n".join(p for p in parts if p)
