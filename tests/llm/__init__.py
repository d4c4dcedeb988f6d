"""Opt-in tests against a real local LLM server (marker `llm`)."""
