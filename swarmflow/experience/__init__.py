"""Experience carried across runs: an on-disk store of short notes (SQLite with full-text
search), the reflection that writes them when a run ends, and the retrieval that offers the
most relevant few to later runs' agents in their card (docs/context.md).
"""
