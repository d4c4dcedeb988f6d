"""Tests of the workspace adapters."""
