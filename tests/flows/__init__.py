"""Tests of the ready-made flows."""
