"""Tool adapters: the built-in tools the model can call and the registry that runs them.

Tools raise `ToolError`; a call (`swarmflow.core.toolcalls`) turns every failure into an
`ok=False` result.
"""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.core.toolcalls import parse_args
    from swarmflow.tools.access import VersionedFiles
    from swarmflow.tools.base import ArgsModel
    from swarmflow.tools.control import MessageAgent, Submit
    from swarmflow.tools.files import Edit, ReadFile, WriteFile
    from swarmflow.tools.paths import resolve_inside
    from swarmflow.tools.registry import ToolRegistry, default_registry
    from swarmflow.tools.search import ListFiles, Search
    from swarmflow.tools.shell import RunShell, scrubbed_env

export_lazily(
    __name__,
    {
        "swarmflow.core.toolcalls": ("parse_args",),
        "swarmflow.tools.access": ("VersionedFiles",),
        "swarmflow.tools.base": ("ArgsModel",),
        "swarmflow.tools.control": ("MessageAgent", "Submit"),
        "swarmflow.tools.files": ("Edit", "ReadFile", "WriteFile"),
        "swarmflow.tools.paths": ("resolve_inside",),
        "swarmflow.tools.registry": ("ToolRegistry", "default_registry"),
        "swarmflow.tools.search": ("ListFiles", "Search"),
        "swarmflow.tools.shell": ("RunShell", "scrubbed_env"),
    },
)

__all__ = [
    "ArgsModel",
    "Edit",
    "ListFiles",
    "MessageAgent",
    "ReadFile",
    "RunShell",
    "Search",
    "Submit",
    "ToolRegistry",
    "VersionedFiles",
    "WriteFile",
    "default_registry",
    "parse_args",
    "resolve_inside",
    "scrubbed_env",
]
