"""Workspace adapters: the directories agent tools act in (`local`, `worktree`, `shared`)."""

from swarmflow.workspaces.local import LocalWorkspace
from swarmflow.workspaces.provider import DefaultWorkspaces
from swarmflow.workspaces.shared import SharedWorkspace, StaleWrite
from swarmflow.workspaces.worktree import OnCommit, WorktreeWorkspace, apply_patch

__all__ = [
    "DefaultWorkspaces",
    "LocalWorkspace",
    "OnCommit",
    "SharedWorkspace",
    "StaleWrite",
    "WorktreeWorkspace",
    "apply_patch",
]
