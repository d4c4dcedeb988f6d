"""Diagnostics as findings: what an edit introduced, filtered, deduplicated and bounded.

A finding is compared by what it says, not where: an edit above it moves its line, and the
same problem must not count as new. "New" means a finding whose key (server, code, message,
the flagged text) occurs more often after the edit than before it (constraint C2 of the
openJiuwen paper: only mechanically produced, filtered, admissible feedback is injected).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from swarmflow.core.feedback_policy import SEVERITY_RANK, Feedback

SEVERITY_NAMES = {rank: name for name, rank in SEVERITY_RANK.items()}


@dataclass(frozen=True, slots=True)
class Finding:
    """One diagnostic of one file."""

    path: str
    line: int
    """1-based."""
    column: int
    severity: int
    """LSP's: 1 error, 2 warning, 3 information, 4 hint."""
    code: str
    message: str
    source: str
    flagged: str = ""
    """The text of the flagged line, stripped: part of what the finding says."""

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.path, self.source, self.code, self.message, self.flagged)

    def render(self) -> str:
        level = SEVERITY_NAMES.get(self.severity, "warning")
        code = f" {self.code}" if self.code else ""
        message = self.message.splitlines()[0] if self.message else ""
        return f"{self.path}:{self.line}:{self.column}: {level}{code} {message} ({self.source})"


def introduced(before: Iterable[Finding], after: Iterable[Finding]) -> list[Finding]:
    """The findings of `after` that `before` does not account for, in `after`'s order."""
    left = Counter(f.key for f in before)
    new: list[Finding] = []
    for finding in after:
        if left[finding.key] > 0:
            left[finding.key] -= 1
        else:
            new.append(finding)
    return new


def admissible(findings: Sequence[Finding], policy: Feedback) -> list[Finding]:
    """At or above the severity, each said once, the most severe first, bounded per file and
    in all."""
    floor = SEVERITY_RANK[policy.min_severity]
    seen: set[tuple[str, int, str, str]] = set()
    ranked = sorted(
        (f for f in findings if f.severity <= floor), key=lambda f: (f.severity, f.path, f.line)
    )
    per_file: Counter[str] = Counter()
    kept: list[Finding] = []
    for finding in ranked:
        said = (finding.path, finding.line, finding.code, finding.message)
        if said in seen or per_file[finding.path] >= policy.max_per_file:
            continue
        seen.add(said)
        per_file[finding.path] += 1
        kept.append(finding)
        if len(kept) >= policy.max_items:
            break
    return kept


def render(server: str, findings: Sequence[Finding], dropped: int) -> str:
    """The inbox item: what the server found that the last edit introduced."""
    lines = [f"{server} found {len(findings) + dropped} new problem(s) after your edit:"]
    lines += [f"- {f.render()}" for f in findings]
    if dropped:
        lines.append(f"- ... and {dropped} more not shown")
    return "\n".join(lines)
