"""Workspace adapters: the directories agent tools act in (`local`, `worktree`, `shared`)."""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.workspaces.local import LocalWorkspace as LocalWorkspace
    from swarmflow.workspaces.provider import DefaultWorkspaces as DefaultWorkspaces
    from swarmflow.workspaces.shared import SharedWorkspace as SharedWorkspace
    from swarmflow.workspaces.shared import StaleWrite as StaleWrite
    from swarmflow.workspaces.worktree import OnCommit as OnCommit
    from swarmflow.workspaces.worktree import WorktreeWorkspace as WorktreeWorkspace
    from swarmflow.workspaces.worktree import apply_patch as apply_patch

export_lazily(__name__)
