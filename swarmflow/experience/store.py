"""The experience store: one SQLite file with a full-text index (FTS5, in the standard
library's sqlite3), in write-ahead-log mode, every write one transaction, so two runs writing
at once lose nothing.

A file that is not a store (corrupt, forged, another program's database, a newer format, not
a regular file) is refused with one `ExperienceError` naming it; nothing in it is changed.
Every query is bounded in time by the one reader (`core.reading.bound_queries`): a forged
store whose `notes` is a view that recurses forever is refused, never waited on.

The store is a sink that persists: each note's text and task pass the one redactor
(`core.secrets`) before they are written: the run's own (given to `add`), which knows the
secrets made during the run (a harness's endpoint key, a board's tokens) besides the
environment's and the model's, and the environment's. So a reflection that echoes a secret
stores `[redacted]`, and so does every later run that is offered the note.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from swarmflow.core import reading
from swarmflow.core.errors import ConfigError
from swarmflow.core.experience_port import NewNote, Note
from swarmflow.core.secrets import Redactor, scrubbed

FORMAT = "swarmflow-experience-1"
BUSY_MS = 10_000
"""How long a write waits for another writer's transaction before it gives up."""
_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL, "
    "kind TEXT NOT NULL, text TEXT NOT NULL, task TEXT NOT NULL, repository TEXT NOT NULL, "
    "run_id TEXT NOT NULL, created REAL NOT NULL)",
    "CREATE VIRTUAL TABLE notes_fts USING fts5(text, task, content='notes', content_rowid='id')",
    "CREATE TRIGGER notes_added AFTER INSERT ON notes BEGIN INSERT INTO notes_fts(rowid, text, "
    "task) VALUES (new.id, new.text, new.task); END",
    "CREATE TRIGGER notes_removed AFTER DELETE ON notes BEGIN INSERT INTO notes_fts(notes_fts, "
    "rowid, text, task) VALUES ('delete', old.id, old.text, old.task); END",
)
_COLUMNS = "id, agent, kind, text, task, repository, run_id, created"
_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)
_COMMON = frozenset(
    (
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "are",
        "was",
        "were",
        "not",
        "but",
        "you",
        "your",
        "have",
        "has",
        "its",
        "when",
        "what",
        "which",
        "will",
        "can",
        "should",
        "then",
        "than",
        "them",
        "they",
        "their",
        "there",
        "use",
        "using",
    )
)
MAX_QUERY_WORDS = 32
KINDS = ("worked", "failed", "note")


class ExperienceError(ConfigError):
    """The experience store cannot be used: it names the file and what is wrong."""


class ExperienceStore:
    """The notes in one SQLite file; each method opens its own connection (threads, runs and
    processes may share the file)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        with self._connection(create=True):
            pass  # created or checked now: a bad file is refused before a run starts

    @contextmanager
    def _connection(self, *, create: bool = False) -> Iterator[sqlite3.Connection]:
        if not create and not self.path.exists():
            raise ExperienceError(f"experience store {self.path}: no such file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                with reading.open_regular(self.path, "an experience store"):
                    pass  # a FIFO would hang SQLite's open
            conn = sqlite3.connect(self.path, timeout=BUSY_MS / 1000, isolation_level=None)
        except ConfigError as exc:
            raise ExperienceError(f"experience store {exc}") from None
        except (OSError, sqlite3.Error) as exc:
            raise ExperienceError(f"experience store {self.path}: cannot open it: {exc}") from None
        try:
            reading.bound_queries(conn)
            self._checked(conn)
            yield conn
        except sqlite3.DatabaseError as exc:
            why = "a query ran past its time bound" if "interrupted" in str(exc) else str(exc)
            raise ExperienceError(
                f"experience store {self.path}: not a usable swarmflow experience store ({why})"
            ) from None
        finally:
            conn.close()

    def _checked(self, conn: sqlite3.Connection) -> None:
        """Create the schema in an empty file; refuse anything that is not this format."""
        conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        kinds = dict(conn.execute("SELECT name, type FROM sqlite_master").fetchall())
        tables = set(kinds)
        if not tables:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN IMMEDIATE")
            if not {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}:
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute("INSERT INTO meta VALUES ('format', ?)", (FORMAT,))
            conn.execute("COMMIT")
            return
        found = None
        if all(kinds.get(name) == "table" for name in ("meta", "notes", "notes_fts")):
            row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            found = row[0] if row else None
        if found != FORMAT:
            what = f"format {found!r}" if found else "another program's database"
            raise ExperienceError(
                f"experience store {self.path}: {what}, not a {FORMAT} store; "
                "name another file with --experience"
            )

    def add(self, notes: Sequence[NewNote], redactor: Redactor | None = None) -> list[Note]:
        """Store `notes` in one transaction; the stored notes with their ids. Each note's
        text and task are scrubbed by `redactor` (the run's) and the environment's first. A
        note its run already stored (a resumed run's reflection, replayed) is not stored
        again: the one stored is returned."""

        def scrub(text: str) -> str:
            return scrubbed(redactor.scrub(text) if redactor is not None else text)

        now = time.time()
        stored = []
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for n in notes:
                    text, task = scrub(n.text), scrub(n.task)
                    given = (n.agent, n.kind, text, task, n.repository, n.run_id)
                    stored.append(_stored_once(conn, given, now))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return stored

    def search(self, agent: str, query: str, limit: int = 3) -> list[Note]:
        """The `limit` notes of `agent` most relevant to `query` (BM25 over text and task)."""
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
        words = [w for w in words if w not in _COMMON][:MAX_QUERY_WORDS]
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)  # quoted: a word is never an operator
        with self._connection() as conn:
            rows = conn.execute(
                f"SELECT {', '.join('n.' + c for c in _COLUMNS.split(', '))} FROM notes_fts "
                "JOIN notes n ON n.id = notes_fts.rowid WHERE notes_fts MATCH ? AND n.agent = ? "
                "ORDER BY bm25(notes_fts) LIMIT ?",
                (match, agent, limit),
            ).fetchall()
        return [_note(row) for row in rows]

    def notes(self, agent: str | None = None) -> list[Note]:
        """Every note (of `agent`, when given), oldest first."""
        where, args = ("WHERE agent = ?", (agent,)) if agent else ("", ())
        with self._connection() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM notes {where} ORDER BY id", args)
            return [_note(row) for row in rows.fetchall()]

    def get(self, note_id: int) -> Note | None:
        with self._connection() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM notes WHERE id = ?", (note_id,))
            found = row.fetchone()
        return _note(found) if found else None

    def forget(self, note_ids: Sequence[int]) -> int:
        """Remove the notes with these ids; how many there were."""
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            gone = 0
            for note_id in note_ids:
                gone += conn.execute("DELETE FROM notes WHERE id = ?", (note_id,)).rowcount
            conn.execute("COMMIT")
        return gone


def _note(row: tuple[object, ...]) -> Note:
    id_, agent, kind, text, task, repository, run_id, created = row
    return Note(
        str(agent),
        str(kind),
        str(text),
        str(task),
        str(repository),
        str(run_id),
        id=int(str(id_)),
        created=float(str(created)),
    )


_Given = tuple[str, str, str, str, str, str]
"""A note's agent, kind, text, task, repository and run, as stored."""


def _stored_once(conn: sqlite3.Connection, given: _Given, now: float) -> Note:
    """The note `given` describes: the one its run stored already, or stored now."""
    agent, kind, text, _task, _repository, run_id = given
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM notes WHERE run_id = ? AND agent = ? AND kind = ? AND text = ?",
        (run_id, agent, kind, text),
    ).fetchone()
    if row is not None:
        return _note(row)
    cursor = conn.execute(
        "INSERT INTO notes (agent, kind, text, task, repository, run_id, created) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (*given, now),
    )
    return Note(*given, id=int(cursor.lastrowid or 0), created=now)
