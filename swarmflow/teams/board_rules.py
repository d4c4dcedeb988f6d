"""What the board accepts from a caller: thread names, agent names, content and timeouts.

The arguments come from a model (or a shell, over HTTP), so every one is checked before it
touches the board, and a bad one is refused with a sentence that says what and why, never an
internal error. Thread names are compared by their NFKC case-folded form, so "Plan", "plan" and
"ｐｌａｎ" (full-width) are one thread and a look-alike cannot open a second.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence

from swarmflow.core.errors import ToolError

MAX_THREAD_NAME = 80
"""Characters in a thread name."""
MAX_CONTENT = 20_000
"""Characters in one message."""
MAX_MENTIONS = 64
"""Names in one message's `mentions` (and in one thread's `participants`)."""
MAX_THREADS = 1_000
"""Threads on one board."""
MAX_WAIT = 3_600.0
"""Seconds one `wait_for_mention` may wait."""
_SHOWN = 40
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def shown(text: str) -> str:
    """A caller's text quoted for an error message, cut to a readable length."""
    cut = text if len(text) <= _SHOWN else f"{text[:_SHOWN]}..."
    return repr(cut)


def thread_key(name: str) -> str:
    """The form two thread names are compared in (look-alikes and case collapse)."""
    return unicodedata.normalize("NFKC", name).casefold()


def check_thread_name(name: object) -> str:
    """The thread name, stripped; refused when empty, too long or holding control characters."""
    if not isinstance(name, str):
        raise ToolError(f"a thread name must be text, got {type(name).__name__}")
    name = name.strip().removeprefix("#").strip()
    if not name:
        raise ToolError("a thread name cannot be empty")
    if len(name) > MAX_THREAD_NAME:
        raise ToolError(
            f"thread name {shown(name)} is {len(name)} characters; at most {MAX_THREAD_NAME}"
        )
    hidden = [c for c in name if unicodedata.category(c) in _HIDDEN_CATEGORIES]
    if hidden:
        raise ToolError(
            f"thread name {shown(name)} holds invisible or control characters "
            f"({', '.join(f'U+{ord(c):04X}' for c in hidden[:3])}); use visible text"
        )
    return name


def agent_names(names: object, *, what: str) -> list[str]:
    """A list of agent names (an `@` prefix allowed), deduplicated in order; refused when not
    a list of text or longer than `MAX_MENTIONS`."""
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, Sequence):
        raise ToolError(f"{what} must be a list of agent names")
    if len(names) > MAX_MENTIONS:
        raise ToolError(f"{what} lists {len(names)} names; at most {MAX_MENTIONS}")
    out: list[str] = []
    for name in names:
        if not isinstance(name, str):
            raise ToolError(f"{what} must be agent names, got {type(name).__name__}")
        clean = name.strip().removeprefix("@")
        if clean not in out:
            out.append(clean)
    return out


def check_content(content: object) -> str:
    """Message text: refused when empty or longer than `MAX_CONTENT`."""
    if not isinstance(content, str):
        raise ToolError(f"message content must be text, got {type(content).__name__}")
    if not content.strip():
        raise ToolError("a message cannot be empty")
    if len(content) > MAX_CONTENT:
        raise ToolError(
            f"message is {len(content)} characters; at most {MAX_CONTENT} (post it in parts "
            "or put it in a file)"
        )
    return content


def check_timeout(timeout: object) -> float | None:
    """Seconds to wait: None waits without a limit; refused when negative, not a number or
    above `MAX_WAIT`."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ToolError(f"timeout must be a number of seconds, got {type(timeout).__name__}")
    seconds = float(timeout)
    if math.isnan(seconds) or seconds < 0:
        raise ToolError(f"timeout must be 0 or more seconds, got {timeout}")
    if seconds > MAX_WAIT:
        raise ToolError(f"timeout {timeout} s is too long; at most {MAX_WAIT:.0f} s")
    return seconds
