"""Harness templates: the command lines of common finished harnesses, aimed at the run.

Each returns a `Harness` whose program talks to the metering endpoint (its base URL and key
are in the environment as `OPENAI_BASE_URL`, `OPENAI_API_BASE` and `OPENAI_API_KEY`, which
OpenAI clients and litellm read). `mini_swe_agent` is tested here against a real
mini-swe-agent; the others are documented (docs/harnesses.md says what each needs).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from swarmflow.core.harness_spec import Harness

OFFLINE_LITELLM = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm fetches its cost map at import otherwise
    "LITELLM_TELEMETRY": "False",
    "LITELLM_LOG": "ERROR",
}
"""What keeps litellm from reaching the network on its own."""


def mini_swe_agent(
    *,
    program: Sequence[str] | None = None,
    step_limit: int = 0,
    timeout: float = 600.0,
    board: bool = False,
    env: Mapping[str, str] | None = None,
) -> Harness:
    """mini-swe-agent (`pip install mini-swe-agent`, the `harness` extra): its `mini` command
    (by default `python -m minisweagent.run.mini` of swarmflow's own Python; `program`
    names another, `["mini"]` for one on PATH), non-interactive (the default agent, `--yolo`,
    `--exit-immediately`), the task as `--task`, its trajectory written to the answer file,
    whose `info.submission` is the answer: what the agent printed after
    `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`. `step_limit` is its own (0: none); the agent's
    `max_steps` and allowance hold at the endpoint either way."""
    return Harness(
        name="mini-swe-agent",
        command=(
            *(program or (sys.executable, "-m", "minisweagent.run.mini")),
            "--agent-class",
            "default",
            "--yolo",
            "--exit-immediately",
            "--model",
            "openai/{model}",
            "--config",
            "mini.yaml",
            "--config",
            f"agent.step_limit={step_limit}",
            "--config",
            "agent.cost_limit=0",
            "--config",
            "model.cost_tracking=ignore_errors",
            "--output",
            "{answer_file}",
            "--task",
            "{task}",
        ),
        answer="file",
        answer_field="info.submission",
        timeout=timeout,
        board=board,
        env={
            **OFFLINE_LITELLM,
            "MSWEA_CONFIGURED": "true",  # no first-run questions
            "MSWEA_SILENT_STARTUP": "true",
            "MSWEA_COST_TRACKING": "ignore_errors",
            **(env or {}),
        },
    )


def codex_cli(*, timeout: float = 900.0, board: bool = False) -> Harness:
    """OpenAI's Codex CLI (`npm install -g @openai/codex`), `codex exec`, with a model
    provider named `swarmflow` that speaks chat completions to the endpoint; its last message
    is the answer. Needs a Codex release that still accepts `wire_api = "chat"`."""
    return Harness(
        name="codex-cli",
        command=(
            "codex",
            "exec",
            "--skip-git-repo-check",
            "--full-auto",
            "-c",
            "model_provider=swarmflow",
            "-c",
            "model_providers.swarmflow.name=swarmflow",
            "-c",
            "model_providers.swarmflow.base_url={base_url}",
            "-c",
            "model_providers.swarmflow.env_key=SWARMFLOW_MODEL_KEY",
            "-c",
            "model_providers.swarmflow.wire_api=chat",
            "--model",
            "{model}",
            "--output-last-message",
            "{answer_file}",
            "{task}",
        ),
        answer="file",
        timeout=timeout,
        board=board,
    )


def aider(*, timeout: float = 900.0, board: bool = False) -> Harness:
    """aider (`pip install aider-chat`), one message and exit, edits left uncommitted (the
    run commits the worktree); it reads `OPENAI_API_BASE` through litellm. Its answer is its
    stdout."""
    return Harness(
        name="aider",
        command=(
            "aider",
            "--yes-always",
            "--no-auto-commits",
            "--no-check-update",
            "--no-show-release-notes",
            "--no-analytics",
            "--no-pretty",
            "--no-stream",
            "--model",
            "openai/{model}",
            "--message",
            "{task}",
        ),
        timeout=timeout,
        board=board,
        env=OFFLINE_LITELLM,
    )


def claude_code(*, base_url: str, timeout: float = 900.0, board: bool = False) -> Harness:
    """Claude Code (`npm install -g @anthropic-ai/claude-code`), `claude -p` with JSON output
    (its `result` is the answer). Claude Code speaks Anthropic's Messages API, not chat
    completions: `base_url` is a translating proxy that forwards to this call's endpoint
    (`$OPENAI_BASE_URL`), for example LiteLLM's proxy. In the sandbox nothing but the run's
    endpoints is reachable, so the proxy must start inside the harness's own command (wrap
    this command in a script that starts it first)."""
    return Harness(
        name="claude-code",
        command=(
            "claude",
            "-p",
            "--output-format",
            "json",
            "--dangerously-skip-permissions",
            "--model",
            "{model}",
            "{task}",
        ),
        answer_field="result",
        timeout=timeout,
        board=board,
        env={"ANTHROPIC_BASE_URL": base_url, "DISABLE_TELEMETRY": "1"},
    )
