"""Tool adapters: the built-in tools the model can call and the registry that runs them.

Tools raise `ToolError`; a call (`swarmflow.core.toolcalls`) turns every failure into an
`ok=False` result.
"""

from typing import TYPE_CHECKING

from swarmflow.core.lazy import export_lazily

if TYPE_CHECKING:
    from swarmflow.core.toolcalls import parse_args as parse_args
    from swarmflow.tools.access import VersionedFiles as VersionedFiles
    from swarmflow.tools.base import ArgsModel as ArgsModel
    from swarmflow.tools.control import MessageAgent as MessageAgent
    from swarmflow.tools.control import Submit as Submit
    from swarmflow.tools.files import Edit as Edit
    from swarmflow.tools.files import ReadFile as ReadFile
    from swarmflow.tools.files import WriteFile as WriteFile
    from swarmflow.tools.paths import resolve_inside as resolve_inside
    from swarmflow.tools.registry import ToolRegistry as ToolRegistry
    from swarmflow.tools.registry import default_registry as default_registry
    from swarmflow.tools.search import ListFiles as ListFiles
    from swarmflow.tools.search import Search as Search
    from swarmflow.tools.shell import RunShell as RunShell
    from swarmflow.tools.shell import scrubbed_env as scrubbed_env
    from swarmflow.tools.shell_limits import ShellLimits as ShellLimits

export_lazily(__name__)
