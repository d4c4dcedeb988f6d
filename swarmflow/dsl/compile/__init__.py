"""The `.swarm` back end: a checked tree to a plan, the plan to a `Flow`, and running its steps."""
