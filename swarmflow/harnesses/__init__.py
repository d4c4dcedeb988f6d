"""Finished harnesses as governed team members (docs/harnesses.md).

`Agent("coder", workspace="worktree", harness=mini_swe_agent())` makes an agent whose calls
run an outside agent program in its workspace, sandboxed, its model calls metered through an
endpoint the run serves, its board through per-agent commands, its answer and patch the
agent's product.
"""

from swarmflow.core.harness_spec import Harness
from swarmflow.harnesses.templates import aider, claude_code, codex_cli, mini_swe_agent

__all__ = ["Harness", "aider", "claude_code", "codex_cli", "mini_swe_agent"]
