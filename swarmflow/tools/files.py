"""The file tools: `read_file`, `write_file` and `edit`.

`read_file` shows lines numbered like `cat -n` (a right-aligned 1-based number, a tab, the line),
so the model can cite lines; the numbers are not part of the file and `edit` must not include them.
"""

from __future__ import annotations

from pydantic import Field

from swarmflow.core.errors import ToolError
from swarmflow.core.ports import ToolContext, ToolResult
from swarmflow.tools.access import read_text, unseen_notes, write_text
from swarmflow.tools.base import ArgsModel, BuiltinTool

MAX_LINES = 2000
MAX_LINE_CHARS = 2000
INTENT = (
    "Optional: why you make this change, in a sentence. In a shared workspace the agents "
    "that read the file later are shown it."
)


class ReadFileArgs(ArgsModel):
    """Arguments of `read_file`."""

    path: str = Field(description="File path relative to the workspace root.")
    offset: int = Field(1, ge=1, description="First line to show (1-based).")
    limit: int | None = Field(
        None, ge=1, description=f"How many lines to show (default and maximum {MAX_LINES})."
    )


class WriteFileArgs(ArgsModel):
    """Arguments of `write_file`."""

    path: str = Field(description="File path relative to the workspace root.")
    content: str = Field(description="The complete new content of the file.")
    intent: str = Field("", max_length=500, description=INTENT)


class EditArgs(ArgsModel):
    """Arguments of `edit`."""

    path: str = Field(description="File path relative to the workspace root.")
    old: str = Field(description="Exact text to replace; must occur exactly once in the file.")
    new: str = Field(description="Text to put in its place.")
    intent: str = Field("", max_length=500, description=INTENT)


class ReadFile(BuiltinTool[ReadFileArgs], name="read_file", workspace=True):
    """Read a text file. Lines come numbered like `cat -n` (number, tab, text); the numbers are
    not part of the file. Use offset/limit to page through long files."""

    async def call(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        """Read and number the requested lines."""
        notes = unseen_notes(ctx, self.name, args.path)  # before the read marks them seen
        text = await read_text(ctx, self.name, args.path)
        shown = number_lines(args.path, text, args.offset, args.limit)
        if notes:
            intents = "\n".join(f"- {note}" for note in notes)
            shown = f"Intent notes on changes you have not seen:\n{intents}\n\n{shown}"
        return ToolResult(shown)


class WriteFile(BuiltinTool[WriteFileArgs], name="write_file", workspace=True):
    """Create or overwrite a text file with the given content (parent dirs are made)."""

    async def call(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        """Write the whole file, creating directories as needed."""
        await write_text(ctx, self.name, args.path, args.content, note=args.intent)
        size = len(args.content.encode("utf-8"))
        lines = _count_lines(args.content)
        return ToolResult(f"wrote {size} bytes ({lines} lines) to {args.path}")


class Edit(BuiltinTool[EditArgs], name="edit", workspace=True):
    """Replace the exact text `old` with `new` in a file. `old` must occur exactly once:
    include enough surrounding lines to make it unique. Do not include line numbers."""

    async def call(self, args: EditArgs, ctx: ToolContext) -> ToolResult:
        """Check that `old` is unique, then replace it."""
        # Peek without recording: in a shared workspace the write must be judged against the
        # version the agent read before, not against this internal read.
        text = await read_text(ctx, self.name, args.path, record=False)
        updated, line = replace_once(args.path, text, args.old, args.new)
        await write_text(ctx, self.name, args.path, updated, note=args.intent)
        return ToolResult(f"edited {args.path}: replaced 1 occurrence at line {line}")


def replace_once(path: str, text: str, old: str, new: str) -> tuple[str, int]:
    """`text` with its single occurrence of `old` replaced, and the 1-based line it starts on."""
    if not old:
        raise ToolError(f"edit of {path}: `old` is empty; give the exact text to replace")
    if old == new:
        raise ToolError(f"edit of {path}: `old` and `new` are identical; nothing would change")
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"edit of {path} refused: `old` occurs 0 times in the file. Re-read the file and "
            "copy the text exactly (whitespace included, without line numbers)."
        )
    if count > 1:
        raise ToolError(
            f"edit of {path} refused: `old` occurs {count} times in the file; include more "
            "surrounding text so it occurs exactly once."
        )
    start = text.index(old)
    return text[:start] + new + text[start + len(old) :], text.count("\n", 0, start) + 1


def number_lines(path: str, text: str, offset: int, limit: int | None) -> str:
    """Lines `offset`.. of `text` numbered like `cat -n`, with a note when more remain."""
    lines = text.splitlines()
    if not lines:
        return f"({path} is empty)"
    if offset > len(lines):
        raise ToolError(f"offset {offset} is past the end of {path} ({len(lines)} lines)")
    count = min(limit or MAX_LINES, MAX_LINES)
    shown = lines[offset - 1 : offset - 1 + count]
    body = "\n".join(f"{offset + i:>6}\t{_clip(line)}" for i, line in enumerate(shown))
    last = offset - 1 + len(shown)
    if last < len(lines):
        body += f"\n... (lines {offset}-{last} of {len(lines)}; pass offset={last + 1} to read on)"
    return body


def _clip(line: str) -> str:
    """One line, shortened when very long (minified files would flood the context)."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[:MAX_LINE_CHARS] + f"... [{len(line) - MAX_LINE_CHARS} more characters]"


def _count_lines(text: str) -> int:
    """Lines in `text`, counting a last line without newline."""
    return len(text.splitlines())
