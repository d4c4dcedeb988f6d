"""The `.swarm` checker: every located problem before a run, from one table of callables."""
