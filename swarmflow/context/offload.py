"""Offloading: a large observation moves to a file and the context keeps a note naming it,
with a structure-aware preview, so the agent can read the whole of it back with its file
tools.

Where it goes: `.swarmflow-context/<session>/<digest>.txt` inside the agent's workspace, the
one place its file tools read (the run directory is hidden from them, `tools.paths`); the
folder holds a `.gitignore` of `*`, so a worktree's commit never takes it into the patch.
Every write goes through the safe-path layer (`core.safe_paths`): a link in the way is
refused, never followed out of the workspace.
An agent without a workspace has no file tools: its content goes to the run directory's
`context/<session>/` folder, named by its full path, for a person or a later run to read.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from pathlib import Path

import anyio.to_thread

from swarmflow.context.history import old_end
from swarmflow.context.registry import Reduction
from swarmflow.context.structure import reduce_text
from swarmflow.context.surroundings import Pressure, Surroundings
from swarmflow.core import safe_paths
from swarmflow.core.messages import Message

OFFLOAD_DIR = ".swarmflow-context"
OFFLOADED = "[offloaded:"
NOTE = "[offloaded: {chars:,} characters of {what} saved to {name}; {how}]"
PREVIEW_CHARS = 1_200
"""The most of an offloaded observation's reduced form the note keeps beside it."""


def _place(around: Surroundings) -> tuple[Path, str, str, str] | None:
    """The root to write under, the folder in it, the prefix the note names files by, and
    how to read them."""
    session = re.sub(r"[^A-Za-z0-9_.-]", "_", around.session)
    if session in ("", ".", ".."):
        session = f"_{session}"
    if around.workspace is not None:
        rel = f"{OFFLOAD_DIR}/{session}"
        return around.workspace, rel, rel + "/", "read it back with read_file"
    if around.run_dir is not None:
        folder = around.run_dir / "context" / session
        return around.run_dir, f"context/{session}", f"{folder}/", "kept in the run directory"
    return None


def _write(root: Path, folder: str, name: str, text: str) -> None:
    """Write through the safe-path layer: the agent can write its workspace, so a
    `.swarmflow-context` that is a link (committed, or made by a command) is refused, never
    followed out of it."""
    if folder.startswith(OFFLOAD_DIR):
        safe_paths.write_bytes(root, f"{OFFLOAD_DIR}/.gitignore", b"*\n", exclusive=True)
    # Named by its digest: the same text is written once.
    data = text.encode("utf-8", "surrogatepass")
    safe_paths.write_bytes(root, f"{folder}/{name}", data, exclusive=True)


async def save(around: Surroundings, text: str, what: str) -> str | None:
    """Write `text` out; the note naming where (None when the session has nowhere)."""
    place = _place(around)
    if place is None:
        return None
    root, folder, prefix, how = place
    name = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16] + ".txt"
    try:
        await anyio.to_thread.run_sync(_write, root, folder, name, text)
    except OSError:  # a full disk, a read-only workspace, a link planted in the way (refused
        return None  # by the safe-path layer): the other levels still fit it
    return NOTE.format(chars=len(text), what=what, name=prefix + name, how=how)


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """What the note keeps of `text`: its structure-aware reduction, its start and its end
    when longer than `limit` (a log says how it ended last)."""
    reduced, _ = reduce_text(text)
    if len(reduced) <= limit:
        return reduced
    half = limit // 2
    gap = len(reduced) - 2 * half
    return f"{reduced[:half]}\n[… {gap:,} characters of the preview left out …]\n{reduced[-half:]}"


def _what(history: list[Message], index: int) -> str:
    """`run_shell output` for a tool result, from the call that asked for it."""
    name = history[index].name
    return f"{name} output" if name else "a tool result"


async def offload(history: list[Message], pressure: Pressure) -> Reduction | None:
    """Older observations over the policy's size move to files, a note and preview each."""
    end = old_end(history, pressure.policy.keep_recent)
    out = list(history)
    moved: list[str] = []
    for i in range(1, end):
        m = out[i]
        content = m.content or ""
        if m.role != "tool" or len(content) <= pressure.policy.offload_chars:
            continue
        if content.startswith(OFFLOADED):
            continue
        note = await save(pressure.around, content, _what(out, i))
        if note is None:
            return None
        out[i] = replace(m, content=f"{note}\n{preview(content)}")
        moved.append(note.split(" saved to ", 1)[1].split(";", 1)[0])
    if not moved:
        return None
    shown = ", ".join(moved[:3]) + (f" and {len(moved) - 3} more" if len(moved) > 3 else "")
    return Reduction(out, f"{len(moved)} observations offloaded to {shown}")
