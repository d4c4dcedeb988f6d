"""Workspace adapters: the directories agent tools act in (`local`, `worktree`, `shared`)."""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.workspaces.local import LocalWorkspace
    from swarmflow.workspaces.provider import DefaultWorkspaces
    from swarmflow.workspaces.shared import SharedWorkspace, StaleWrite
    from swarmflow.workspaces.worktree import OnCommit, WorktreeWorkspace, apply_patch

export_lazily(
    __name__,
    {
        "swarmflow.workspaces.local": ("LocalWorkspace",),
        "swarmflow.workspaces.provider": ("DefaultWorkspaces",),
        "swarmflow.workspaces.shared": ("SharedWorkspace", "StaleWrite"),
        "swarmflow.workspaces.worktree": ("OnCommit", "WorktreeWorkspace", "apply_patch"),
    },
)

__all__ = [
    "DefaultWorkspaces",
    "LocalWorkspace",
    "OnCommit",
    "SharedWorkspace",
    "StaleWrite",
    "WorktreeWorkspace",
    "apply_patch",
]
