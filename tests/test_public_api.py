"""The public surface is deliberate: `__all__` is exactly what the contract names."""

import importlib
import subprocess
import sys

import swarmflow

CONTRACT = {
    "flow",
    "Agent",
    "Team",
    "agent",
    "AgentOutput",
    "run",
    "run_sync",
    "budget",
    "parallel",
    "compact",
    "pipeline",
    "agent_session",
    "human",
    "Ok",
    "Failed",
    "Cancelled",
    "Empty",
    "SwarmflowError",
    "TopologyError",
    "BudgetExhausted",
}
EXTRAS = {
    "AgentFailed",
    "BudgetSnapshot",
    "ConfigError",
    "Flow",
    "FlowFailed",
    "HumanTimeout",
    "Limits",
    "ModelError",
    "Patch",
    "RoleReport",
    "RunPaused",
    "RunResult",
    "TeamResult",
    "TextDelta",
    "ToolCallContext",
    "batch",
    "mcp_http",
    "mcp_stdio",
    "stream",
    "team",
    "tool",
    "tool_policy",
}


def test_all_is_the_contract_plus_documented_extras() -> None:
    assert set(swarmflow.__all__) == CONTRACT | EXTRAS
    assert swarmflow.__all__ == sorted(swarmflow.__all__, key=lambda n: (n[0].islower(), n))


def test_every_name_in_all_exists() -> None:
    for name in swarmflow.__all__:
        assert getattr(swarmflow, name) is not None


def test_errors_share_one_root() -> None:
    for name in ("TopologyError", "BudgetExhausted", "AgentFailed", "ConfigError", "ModelError"):
        assert issubclass(getattr(swarmflow, name), swarmflow.SwarmflowError)


def test_import_has_no_heavy_side_effects() -> None:
    code = (
        "import sys, swarmflow; "
        "heavy = [m for m in ('openai', 'networkx', 'lark', 'jinja2') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_submodules_import() -> None:
    for mod in ("swarmflow.testing", "swarmflow.channels", "swarmflow.rails", "swarmflow.record.sinks"):
        importlib.import_module(mod)


def test_a_run_never_imports_the_test_helpers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The production path (resolving and checking a model included) leaves swarmflow.testing
    unimported."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import sys
        from swarmflow import Agent, Team, agent, flow, run_sync
        from swarmflow.core.messages import ModelResponse

        class Echo:
            name = "echo"
            is_test_model = True

            async def complete(self, request):
                return ModelResponse(text="hi")

        @flow(team=Team([Agent("w")]))
        async def f():
            return (await agent("w", "go")).text

        assert run_sync(f, model=Echo(), events="memory").output == "hi"
        print("swarmflow.testing" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"
