"""One language server for one workspace, over stdio through pygls's language client.

The connection opens documents with their text, sends each change as the whole new text,
and keeps the diagnostics the server last published for each file (servers push them:
`textDocument/publishDiagnostics`). `stop` ends the server politely (shutdown, exit) and stops
it when it does not go within a few seconds; either way the supervisor (`tools.supervisor`)
ends every process it started: no process outlives the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from lsprotocol import types as lsp
from pygls.io_ import run_async
from pygls.lsp.client import LanguageClient
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from swarmflow.feedback.findings import Finding
from swarmflow.feedback.servers import ServerSpec, ServerUnavailable
from swarmflow.tools.supervisor import STOP_GRACE as TREE_GRACE
from swarmflow.tools.supervisor import kill as kill_supervised
from swarmflow.tools.supervisor import stop as stop_supervised
from swarmflow.tools.supervisor import supervised

STOP_GRACE = 3.0
"""Seconds a server has to exit after `shutdown` before it is killed."""


class _Protocol(LanguageServerProtocol):
    """Reads the `initialize` answer as plain data: servers advertise capabilities newer than
    the protocol types know (ruff's notebook filters), and the typed reading refuses them."""

    def get_result_type(self, method: str) -> Any:  # type: ignore[override]
        if method == lsp.INITIALIZE:
            return None
        return super().get_result_type(method)


class _Client(LanguageClient):
    """pygls's client, starting the server with its stderr discarded (a server that logs
    much would otherwise fill an unread pipe and stall) under the one supervisor, in a
    session of its own: whatever it starts, `setsid` children included, ends with it."""

    async def start_io(self, cmd: str, *args: Any, **kwargs: Any) -> None:
        server = await asyncio.create_subprocess_exec(
            *supervised([cmd, *args]),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
            **kwargs,
        )
        assert server.stdin is not None and server.stdout is not None
        self.protocol.set_writer(server.stdin)
        reader = run_async(
            stop_event=self._stop_event,
            reader=server.stdout,
            protocol=self.protocol,
            logger=None,
            error_handler=self.report_server_error,
        )
        self._server = server
        # pygls's client owns these tasks and gathers them in `stop()`, which we always call.
        self._async_tasks.extend(
            [
                asyncio.create_task(reader),  # noqa: TID251
                asyncio.create_task(self._server_exit()),  # type: ignore[no-untyped-call]  # noqa: TID251
            ]
        )


@dataclass(frozen=True, slots=True)
class Published:
    """What the server last said about one file."""

    version: int | None
    findings: tuple[Finding, ...]
    count: int
    """Publications for the file so far (a server may omit the version)."""


class Connection:
    """A started language server for the files under `root`."""

    def __init__(self, spec: ServerSpec, root: Path) -> None:
        self.spec = spec
        self.root = root
        self.client = _Client("swarmflow", "1", protocol_cls=_Protocol)
        self.versions: dict[Path, int] = {}
        self.texts: dict[Path, str] = {}
        self.published: dict[Path, Published] = {}
        self.ready = False
        """It answered `initialize`: it is asked to shut down before it is killed."""
        self._news = anyio.Event()

        # A plain function: pygls marks the handler it registers, which a bound method refuses.
        def on_publish(params: lsp.PublishDiagnosticsParams) -> None:
            self._on_publish(params)

        self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(on_publish)

    @property
    def pid(self) -> int | None:
        server = self.client._server
        return None if server is None else server.pid

    async def start(self, command: Sequence[str], timeout: float) -> None:
        """Start the server and initialize it, within `timeout` seconds."""
        try:
            await self.client.start_io(command[0], *command[1:], cwd=str(self.root))
        except OSError as exc:
            raise ServerUnavailable(f"cannot start {' '.join(command)}: {exc}") from None
        params = lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities(
                text_document=lsp.TextDocumentClientCapabilities(
                    publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(
                        version_support=True
                    )
                )
            ),
            process_id=None,
            root_uri=self.root.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(self.root.as_uri(), self.root.name)],
        )
        try:
            with anyio.fail_after(timeout):
                await self.client.initialize_async(params)
        except TimeoutError:
            raise ServerUnavailable(f"it did not answer initialize within {timeout:g}s") from None
        except Exception as exc:  # a server that died or answered nonsense
            raise ServerUnavailable(f"initialize failed: {exc}") from None
        self.client.initialized(lsp.InitializedParams())
        self.ready = True

    def is_open(self, path: Path) -> bool:
        return path in self.versions

    def send(self, path: Path, text: str) -> int:
        """Open `path` with `text`, or send `text` as its whole new content; the version."""
        uri = path.as_uri()
        self.texts[path] = text
        if path not in self.versions:
            self.versions[path] = 1
            item = lsp.TextDocumentItem(uri, self.spec.language, 1, text)
            self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(item))
            return 1
        version = self.versions[path] = self.versions[path] + 1
        change = lsp.TextDocumentContentChangeWholeDocument(text)
        document = lsp.VersionedTextDocumentIdentifier(version, uri)
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(document, [change]))
        return version

    def current(self, path: Path) -> Published | None:
        return self.published.get(path)

    def answered(self, path: Path, version: int, count_before: int) -> Published | None:
        """The publication for `version` of `path`, once it came."""
        found = self.published.get(path)
        if found is None or found.count <= count_before:
            return None
        if found.version is not None and found.version < version:
            return None
        return found

    async def wait_for(
        self, path: Path, version: int, count_before: int, seconds: float
    ) -> Published | None:
        """Wait at most `seconds` for the diagnostics of `version` (None: not yet)."""
        with anyio.move_on_after(seconds):
            while (found := self.answered(path, version, count_before)) is None:
                await self._news.wait()
            return found
        return None

    def _on_publish(self, params: lsp.PublishDiagnosticsParams) -> None:
        path = Path(to_fs_path(params.uri) or params.uri)
        text = self.texts.get(path, "")
        findings = tuple(self._finding(path, text, d) for d in params.diagnostics)
        before = self.published.get(path)
        count = (before.count if before else 0) + 1
        self.published[path] = Published(params.version, findings, count)
        self._news.set()
        self._news = anyio.Event()

    def _finding(self, path: Path, text: str, diagnostic: lsp.Diagnostic) -> Finding:
        start = diagnostic.range.start
        lines = text.splitlines()
        flagged = lines[start.line].strip() if start.line < len(lines) else ""
        try:
            shown = str(path.relative_to(self.root))
        except ValueError:
            shown = str(path)
        code = diagnostic.code
        return Finding(
            path=shown,
            line=start.line + 1,
            column=start.character + 1,
            severity=int(diagnostic.severity or 1),
            code="" if code is None else str(code),
            message=diagnostic.message,
            source=diagnostic.source or self.spec.name,
            flagged=flagged,
        )

    async def stop(self) -> None:
        """Shut the server down; kill it when it does not exit within `STOP_GRACE`."""
        server = self.client._server
        if server is None:
            return
        if server.returncode is None and self.ready:
            with anyio.move_on_after(STOP_GRACE), contextlib.suppress(Exception):
                await self.client.shutdown_async(None)
                self.client.exit(None)
                await server.wait()
        if server.returncode is None:
            stop_supervised(server.pid)
            with anyio.move_on_after(TREE_GRACE):
                await server.wait()
        if server.returncode is None:
            kill_supervised(server.pid)
        with anyio.move_on_after(STOP_GRACE), contextlib.suppress(Exception):
            await self.client.stop()  # type: ignore[no-untyped-call]


def elapsed_since(started: float) -> float:
    return round(time.perf_counter() - started, 6)
