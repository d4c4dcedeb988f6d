"""Durable runs: replaying journaled calls, reattaching workspaces, reopening a stopped run."""
