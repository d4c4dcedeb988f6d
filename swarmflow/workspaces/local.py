"""The `local` workspace: a plain directory, used as it is."""

from __future__ import annotations

from pathlib import Path


class LocalWorkspace:
    """A directory the agent's tools act in directly; nothing is committed or cleaned up."""

    kind = "local"

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve()
        self.notes: set[str] = set()
        """Notices already given in this workspace's run (the provider shares its set)."""

    async def finalize(self, message: str) -> None:
        """Nothing to commit: a local directory is not versioned by swarmflow."""
        return None

    async def release(self, keep: bool = False) -> None:
        """Nothing to give back: the directory is the caller's."""
        return None
