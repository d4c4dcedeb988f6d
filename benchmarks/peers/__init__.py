"""Side by side with other Python engines: `python -m benchmarks.peers` (`make bench-peers`).

LangGraph and pydantic-graph go into a separate virtualenv (`.venv-peers` by default), never
into the project's own. `shapes.py` runs the fan-out, chain and skew shapes there in a
subprocess and prints JSON; the same shapes run here in swarmflow, and the ratios are printed.
"""

PEER_PACKAGES = ("langgraph", "pydantic-graph")
PEER_MODULES = ("langgraph", "pydantic_graph")
ENGINES = ("langgraph", "pydantic-graph")
