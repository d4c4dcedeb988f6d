"""Team declarations: agents, and the edges along which work may pass between them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from swarmflow.core.context_policy import ContextPolicy
from swarmflow.core.environ import EnvPairs
from swarmflow.core.errors import ConfigError
from swarmflow.core.feedback_policy import Feedback
from swarmflow.core.harness_spec import Harness

if TYPE_CHECKING:
    import networkx as nx

HUMAN = "human"
"""The built-in node that stands for a person; handing a value to `human()` needs an edge."""

WorkspaceKind = Literal["none", "local", "worktree", "shared"]
SandboxMode = Literal["auto", "bwrap", "none"]


class Agent(BaseModel):
    """One agent's declaration."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", arbitrary_types_allowed=True, defer_build=True
    )

    name: str
    """Unique within the team; used in edges and events."""
    card: str | None = None
    """Role card: a Jinja2 template string, or a path ending in `.j2` / `.md`."""
    model: Any = None
    """A model object or a model name; None uses the run's default model."""
    tools: tuple[str, ...] = ()
    """Names of the tools this agent may call. Calls to any other tool are refused. Given as
    names, tool objects (`@tool` functions) or tool providers (MCP servers); the objects are
    kept in `provided` and their names listed here."""
    provided: tuple[object, ...] = ()
    """The tool objects and tool providers given in `tools`, in order."""
    workspace: WorkspaceKind = "none"
    """Where its tools act: none, a local directory, its own git worktree, or a shared one."""
    allowance: int | None = None
    """Token allowance for all of this agent's sessions in a run."""
    max_steps: int | None = None
    """Model calls per session before it stops with "step limit reached"."""
    max_goal_rounds: int = Field(default=5, ge=1)
    """Rounds the goal evaluators may ask for before it stops with "goal round limit reached"."""
    max_output_tokens: int = 4096
    """The most output tokens one call may produce (its `max_tokens`, lowered to what the
    budget has left; a call reserves only the output it is expected to write)."""
    description: str = ""
    """One line shown to teammates that can message this agent."""
    listen: Literal["passive", "blocking"] | None = None
    """How it hears board mentions in a Team run: "passive" (at its next step boundary, no
    step spent) or "blocking" (it calls `wait_for_mention`); None takes the team's `listen=`."""
    sandbox: SandboxMode = "auto"
    """How `run_shell` runs: "auto" under bubblewrap when it is installed (said once per run
    when it is not), "bwrap" only under bubblewrap (refused without it), "none" on the host."""
    network: bool = False
    """Whether sandboxed `run_shell` commands may reach the network."""
    env: EnvPairs = ()
    """Environment variables for `run_shell` (a mapping is accepted). In the sandbox they are
    all it sees besides PATH, HOME, LANG and the pager settings."""
    feedback: Feedback | None = None
    """Language-server diagnostics on its edits, posted at its next step (`"lsp"` for the
    defaults, a mapping or `Feedback(...)`; docs/feedback.md)."""
    harness: Harness | None = None
    """An outside agent program that does this agent's work (docs/harnesses.md): each call
    runs it in the agent's workspace, sandboxed as `run_shell` is, its model calls metered
    through an endpoint the run serves. None: a native session."""
    context: ContextPolicy | None = None
    """Which context processors may fire, at what pressure, with which summariser (a mapping
    or `ContextPolicy(...)`; docs/context.md). None: every deterministic level, no summary."""

    def __init__(self, name: str | None = None, /, **data: object) -> None:
        if name is not None:
            data["name"] = name
        super().__init__(**data)

    @model_validator(mode="before")
    @classmethod
    def _split_tools(cls, data: object) -> object:
        """Names stay in `tools`; objects move to `provided`, a tool's name kept in `tools`."""
        if not isinstance(data, dict) or "tools" not in data:
            return data
        given = data["tools"]
        if isinstance(given, str) or _is_tool(given) or _is_provider(given):
            given = [given]
        names: list[str] = []
        provided = list(data.get("provided", ()))
        for item in given:
            names.extend(_tool_entry(item, provided, data.get("name")))
        return {**data, "tools": tuple(dict.fromkeys(names)), "provided": tuple(provided)}

    @field_validator("feedback", mode="before")
    @classmethod
    def _feedback_policy(cls, value: object) -> Feedback | None:
        return Feedback.coerce(value)

    @model_validator(mode="after")
    def _harness_has_a_workspace(self) -> Agent:
        if self.harness is not None and self.workspace == "none":
            raise ValueError(
                f"agent {self.name!r} runs a harness, which works in a workspace: declare "
                "workspace='worktree', 'local' or 'shared'"
            )
        return self

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not value.isidentifier():
            raise ValueError(f"agent name {value!r} must be an identifier")
        if value == HUMAN:
            raise ValueError("'human' is the built-in node and cannot be declared as an agent")
        return value


def _tool_entry(item: Any, provided: list[Any], agent: Any) -> list[str]:
    """The names one entry of `tools` adds; an object is also appended to `provided`."""
    if isinstance(item, str):
        return [item]
    if _is_tool(item):
        if item not in provided:
            provided.append(item)
        return [str(item.name)]
    if _is_provider(item):
        if item not in provided:
            provided.append(item)
        return []  # its tools are named when it starts with the run
    raise ConfigError(
        f"agent {agent!r}: tools takes names, @tool functions or tool servers; got {item!r}"
    )


# Duck-typed, as `core.ports.Tool` and `ToolProvider` are: ports names Agent, so this module
# cannot import it.
def _is_tool(item: object) -> bool:
    return all(hasattr(item, attr) for attr in ("name", "description", "args", "run"))


def _is_provider(item: object) -> bool:
    return hasattr(item, "name") and hasattr(item, "open") and not _is_tool(item)


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A problem `Team.check()` found."""

    severity: Literal["error", "warning"]
    code: str
    message: str


class Team(BaseModel):
    """Agents and the directed edges along which values may pass between them."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    agents: tuple[Agent, ...] = ()
    edges: tuple[tuple[str, str], ...] = ()
    entry: tuple[str, ...] = Field(default=())
    """Agents the flow itself talks to first; reachability is measured from them (default: all
    agents without incoming edges)."""

    def __init__(
        self,
        agents: Sequence[Agent] = (),
        edges: Iterable[tuple[str, str]] = (),
        **data: object,
    ) -> None:
        super().__init__(agents=tuple(agents), edges=tuple(tuple(e) for e in edges), **data)

    @field_validator("agents")
    @classmethod
    def _unique(cls, agents: tuple[Agent, ...]) -> tuple[Agent, ...]:
        seen: set[str] = set()
        for a in agents:
            if a.name in seen:
                raise ValueError(f"agent {a.name!r} is declared twice")
            seen.add(a.name)
        return agents

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.agents]

    def get(self, name: str) -> Agent:
        found = self.find(name)
        if found is None:
            raise ConfigError(f"unknown agent {name!r}; the team declares {self.names}")
        return found

    def find(self, name: str) -> Agent | None:
        """The agent called `name`, or None when the team declares none."""
        return self._by_name().get(name)

    def has(self, name: str) -> bool:
        return name in self._by_name()

    def allows(self, source: str, target: str) -> bool:
        """Whether the flow may hand a value from `source` to `target`. The flow may hand an
        agent's work back to a new session of the same agent; an agent messaging itself needs
        a declared self-edge (see `declares`)."""
        return source == target or (source, target) in self._edge_set()

    def declares(self, source: str, target: str) -> bool:
        """Whether the edge `source -> target` is declared (a self-edge only if written)."""
        return (source, target) in self._edge_set()

    def _by_name(self) -> dict[str, Agent]:
        """The agents by name, made once: every agent call looks its agent up."""
        kept = self.__dict__.get("_agents_by_name")
        if kept is None or kept[0] is not self.agents:  # `model_copy(update=...)` copies it
            by_name = {a.name: a for a in self.agents}
            kept = self.__dict__["_agents_by_name"] = (self.agents, by_name)
        return kept[1]

    def _edge_set(self) -> frozenset[tuple[str, str]]:
        kept = self.__dict__.get("_edges_as_set")
        if kept is None or kept[0] is not self.edges:  # as in `_by_name`
            kept = self.__dict__["_edges_as_set"] = (self.edges, frozenset(self.edges))
        return kept[1]

    def graph(self) -> nx.DiGraph:
        """The topology as a `networkx.DiGraph`, with `human` as a built-in node."""
        import networkx as nx

        g = nx.DiGraph()
        for a in self.agents:
            g.add_node(a.name, kind="agent", tools=list(a.tools), workspace=a.workspace)
        g.add_node(HUMAN, kind="human")
        g.add_edges_from(self.edges)
        return g

    def check(self) -> list[Diagnostic]:
        """Static problems: unknown agents in edges, self edges, unreachable agents."""
        known = set(self.names) | {HUMAN}
        out: list[Diagnostic] = []
        for src, dst in self.edges:
            for end in (src, dst):
                if end not in known:
                    out.append(_unknown_agent_diag(end, src, dst, known))
        out.extend(self._unreachable(known))
        return out

    def _unreachable(self, known: set[str]) -> list[Diagnostic]:
        valid = [(s, d) for s, d in self.edges if s in known and d in known]
        has_incoming = {d for _, d in valid}
        roots = set(self.entry) or {n for n in self.names if n not in has_incoming}
        reached = set(roots)
        frontier = list(roots)
        while frontier:
            node = frontier.pop()
            for s, d in valid:
                if s == node and d not in reached:
                    reached.add(d)
                    frontier.append(d)
        return [
            Diagnostic("warning", "unreachable", f"agent {n!r} is reachable from no entry agent")
            for n in self.names
            if n not in reached
        ]

    def mermaid(self) -> str:
        """The declared topology as a Mermaid flowchart."""
        lines = ["flowchart LR"]
        for a in self.agents:
            lines.append(f"    {a.name}[{a.name}]")
        lines.append(f"    {HUMAN}(({HUMAN}))")
        lines.extend(f"    {s} --> {d}" for s, d in self.edges)
        return "\n".join(lines)


def _unknown_agent_diag(name: str, src: str, dst: str, known: set[str]) -> Diagnostic:
    import difflib

    hint = difflib.get_close_matches(name, sorted(known), n=1)
    suffix = f"; did you mean {hint[0]!r}?" if hint else ""
    return Diagnostic(
        "error", "unknown-agent", f"edge {src} -> {dst} names unknown agent {name!r}{suffix}"
    )
