"""The names of the two files a run writes in its run directory (docs/durability.md).

Every other module and test imports them from here.
"""

from __future__ import annotations

EVENTS_FILE = "events.jsonl"
"""The event stream (`record.events`), one event per line."""
JOURNAL_FILE = "journal.jsonl"
"""What a resumed run replays (`record.records`), one record per line."""
