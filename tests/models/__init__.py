"""Tests of the model adapters against a loopback chat-completions server."""
