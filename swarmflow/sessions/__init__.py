"""One agent's conversation: the session and its loops, the agent call, prompts, cards, the context
window, the prompt prefix, tool running, goals and the handoff rule.
"""
