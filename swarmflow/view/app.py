"""The view's web application (Starlette): server-rendered pages, the fragments a page polls
to stay live, the run's self-contained report, and the view's own script and style.

Routes:

```
/                                   runs and experiments (live)
/run/<key>                          one run: budgets, sessions, timeline, transcripts, ...
/experiment/<key>                   one experiment: progress per arm, cells, then its report
/experiment-runs/<key>?arm=&task=   the runs behind one cell of an experiment
/report/<key>                       the run's `swarmflow report --html` page
/fragment/<page>/<key>              the parts of a page that change, as JSON {id: html}
/static/view.js, /static/view.css
```

Every item is looked up in the catalog by key, never opened from a path in the URL. Pages
load nothing from anywhere else: the content security policy allows only this server. The
`Host` header must name the loopback (a page elsewhere cannot reach the view by rebinding a
name to 127.0.0.1). Every page goes through the environment's secret redactor on its way out.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import anyio.to_thread
import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from swarmflow.core.errors import ConfigError
from swarmflow.core.secrets import environment_redactor
from swarmflow.report.html import page_templates
from swarmflow.report.live import RunWatch, calls_by_arm
from swarmflow.report.log import LogError
from swarmflow.view.catalog import Catalog, Item, Kind, scan
from swarmflow.view.experimentstate import ReportCache, read_experiment_state
from swarmflow.view.runstate import RunState, StateCache

PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-src 'self'; base-uri 'none'; "
    "form-action 'none'"
)
"""Nothing but this server: no script of any other origin, no inline script, no fetch out."""
REPORT_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
)
"""The report page carries its script and style inline, and loads nothing."""
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
RUN_FRAGMENTS = (
    "summary",
    "budgets",
    "sessions",
    "timeline",
    "transcripts",
    "refusals",
    "adherence",
    "board",
)
EXPERIMENT_FRAGMENTS = ("progress", "working", "cells", "report")


class View:
    """What the application serves: the folder's catalog and the cached states."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs = StateCache()
        self.reports = ReportCache()
        self.watches: dict[Path, RunWatch] = {}
        self._lock = threading.Lock()
        self._catalog = scan(root)

    def catalog(self, *, fresh: bool = False) -> Catalog:
        if fresh:
            found = scan(self.root)
            with self._lock:
                self._catalog = found
        return self._catalog

    def item(self, key: str, kind: Kind) -> Item | None:
        """The item `key` names (the catalog scanned again when it is new)."""
        return self.catalog().get(key, kind) or self.catalog(fresh=True).get(key, kind)


@cache
def _templates() -> jinja2.Environment:
    env = page_templates("swarmflow.view")
    env.filters["pct"] = lambda v: "-" if v is None else f"{v:.0%}"
    return env


def _render(name: str, **context: Any) -> str:
    return _templates().get_template(name).render(**context)


def _page(text: str, *, policy: str = PAGE_POLICY) -> Response:
    body = environment_redactor().scrub(text)
    return Response(body, media_type="text/html; charset=utf-8", headers=_headers(policy))


def _json(value: Any) -> Response:
    body = environment_redactor().scrub(json.dumps(value, ensure_ascii=False))
    return Response(body, media_type="application/json", headers=_headers(PAGE_POLICY))


def _headers(policy: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": policy,
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }


def _missing(what: str) -> Response:
    page = _render("missing.html.j2", what=what)
    return Response(page, status_code=404, media_type="text/html", headers=_headers(PAGE_POLICY))


# -- the pages ----------------------------------------------------------------------------------


def _index_context(view: View) -> dict[str, Any]:
    catalog = view.catalog(fresh=True)
    rows = []
    for item in catalog.runs():
        try:
            rows.append((item, view.runs.digest(item.path)))
        except LogError:
            continue
    live = any(state.live for _item, state in rows)
    return {"root": view.root, "catalog": catalog, "runs": rows, "live": live}


def _run_context(view: View, item: Item) -> dict[str, Any]:
    state: RunState = view.runs.get(item.path)
    return {"item": item, "s": state, "d": state.digest, "live": state.live}


def _experiment_context(view: View, item: Item) -> dict[str, Any]:
    catalog = view.catalog(fresh=True)
    state = read_experiment_state(item.path, view.runs, catalog.key_of)
    report, figures = view.reports.get(item.path) if state.done else (None, {})
    watch = view.watches.setdefault(item.path, RunWatch(item.path))
    working = watch.at_work() if not state.done else []
    calls = calls_by_arm(watch.in_flight()) if not state.done else {}
    return {
        "calls": {p.name: _arm_calls(p.name, calls) for p in state.progress},
        "item": item,
        "x": state,
        "report": report,
        "figures": figures,
        "working": working,
        "live": not state.done,
    }


def _arm_calls(arm: str, calls: dict[str, int]) -> int:
    """The calls in flight of an arm's batch, or of its best-of candidates' (`<arm>.c1` ...)."""
    return sum(n for name, n in calls.items() if name == arm or name.startswith(f"{arm}.c"))


def _fragments(page: str, names: tuple[str, ...], context: dict[str, Any]) -> dict[str, Any]:
    html = {name: _render(f"{page}_{name}.html.j2", **context) for name in names}
    return {"live": context["live"], "html": html, **_marks(context)}


def _marks(context: dict[str, Any]) -> dict[str, Any]:
    state = context.get("s")
    if state is None:
        return {}
    return {"count": state.digest.count, "status": state.digest.status}


Show = Callable[[View, Item, Request], Response]


def _with_item(view: View, kind: Kind, show: Show) -> Any:
    """An endpoint that finds the item its URL names in the catalog, then shows it (in a
    worker thread: reading a log is blocking file work)."""

    async def endpoint(request: Request) -> Response:
        key = request.path_params["key"]
        item = view.item(key, kind)
        if item is None:
            return _missing(f"no {kind} {key!r} in {view.root}")
        try:
            return await anyio.to_thread.run_sync(show, view, item, request)
        except (LogError, ConfigError) as exc:
            return _missing(str(exc))

    return endpoint


@dataclass(frozen=True, slots=True)
class _LivePage:
    """A page that stays live: `<kind>.html.j2` drawn whole, then each of its `fragments`
    (`<kind>_<name>.html.j2`) drawn again when the page polls for them."""

    kind: Kind
    fragments: tuple[str, ...]
    context: Callable[[View, Item], dict[str, Any]]

    def page(self, view: View, item: Item, request: Request) -> Response:
        context = self.context(view, item)
        return _page(_render(f"{self.kind}.html.j2", fragments=self.fragments, **context))

    def fragment(self, view: View, item: Item, request: Request) -> Response:
        return _json(_fragments(self.kind, self.fragments, self.context(view, item)))


_RUN_PAGE = _LivePage("run", RUN_FRAGMENTS, _run_context)
_EXPERIMENT_PAGE = _LivePage("experiment", EXPERIMENT_FRAGMENTS, _experiment_context)


def _report_page(view: View, item: Item, request: Request) -> Response:
    from swarmflow.report.html import render_html
    from swarmflow.report.log import read_log

    return _page(render_html(read_log(item.path)), policy=REPORT_POLICY)


def _experiment_runs(view: View, item: Item, request: Request) -> Response:
    context = _experiment_context(view, item)
    arm, task = request.query_params.get("arm", ""), request.query_params.get("task", "")
    cells = context["x"].runs(arm, task)
    return _page(_render("experiment_runs.html.j2", arm=arm, task=task, cells=cells, **context))


def build_app(root: Path) -> Starlette:
    """The application serving the runs and experiments under `root`."""
    view = View(root)

    async def index(request: Request) -> Response:
        context = await anyio.to_thread.run_sync(_index_context, view)
        return _page(_render("index.html.j2", **context))

    async def index_fragment(request: Request) -> Response:
        context = await anyio.to_thread.run_sync(_index_context, view)
        return _json(_fragments("index", ("catalog",), context))

    routes = [
        Route("/", index),
        Route("/fragment/index", index_fragment),
        Route("/run/{key:path}", _with_item(view, "run", _RUN_PAGE.page)),
        Route("/fragment/run/{key:path}", _with_item(view, "run", _RUN_PAGE.fragment)),
        Route("/report/{key:path}", _with_item(view, "run", _report_page)),
        Route("/experiment/{key:path}", _with_item(view, "experiment", _EXPERIMENT_PAGE.page)),
        Route(
            "/fragment/experiment/{key:path}",
            _with_item(view, "experiment", _EXPERIMENT_PAGE.fragment),
        ),
        Route("/experiment-runs/{key:path}", _with_item(view, "experiment", _experiment_runs)),
        Mount("/static", StaticFiles(packages=[("swarmflow.view", "static")]), name="static"),
    ]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=LOOPBACK_HOSTS)]
    return Starlette(routes=routes, middleware=middleware)


__all__ = ["LOOPBACK_HOSTS", "PAGE_POLICY", "build_app"]
