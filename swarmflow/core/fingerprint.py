"""Fingerprints of agent outputs, so that text copied into a plain string keeps its origin.

Each output is cut into shingles of consecutive words and hashed. Shingles that were already in
what the agent was given are dropped: an agent that echoes the task does not own the task.
An outgoing prompt that contains any remaining shingle of agent A carries provenance {A}.
"""

from __future__ import annotations

SHINGLE_WORDS = 6


def shingles(text: str, k: int = SHINGLE_WORDS) -> set[int]:
    """Hashes of every run of `k` consecutive words."""
    words = text.split()
    if len(words) < k:
        return set()
    return {hash(tuple(words[i : i + k])) for i in range(len(words) - k + 1)}


class FingerprintIndex:
    """Maps shingle hashes to the agents whose outputs contain them."""

    __slots__ = ("_owners",)

    def __init__(self) -> None:
        self._owners: dict[int, set[str]] = {}

    def __len__(self) -> int:
        return len(self._owners)

    def add(self, agent: str, output: str, given: str = "") -> None:
        """Record `agent`'s output, minus what it was given."""
        if len(output) < 2 * SHINGLE_WORDS - 1:  # too short to hold one shingle of words
            return
        own = shingles(output)
        if not own:
            return
        if given:
            own -= shingles(given)
        for h in own:
            self._owners.setdefault(h, set()).add(agent)

    def sources(self, text: str) -> set[str]:
        """The agents whose fingerprinted output appears in `text`."""
        if not self._owners or not text:
            return set()
        found: set[str] = set()
        for h in shingles(text):
            owners = self._owners.get(h)
            if owners:
                found |= owners
        return found
