"""Tests of the tool adapters."""
