"""The ASGI application (Starlette): the page at ``/``, the JSON API under ``/api/v1/``
(documented by ``/api/openapi.json``), the static files and the papers' docs pages, all read
into memory at start-up (no request touches the file system).

Every request is parsed by :func:`privamp.serve.fields.parse_query` (a bad field: 400 with one
line naming it); the work runs in :class:`privamp.serve.workers.WorkerPool` before the
request's deadline (its budget, default 20 s): a task past it is stopped and the answer says
so (408 when nothing could be computed).  Answers are cached (LRU).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .. import __version__
from .fields import FieldError, Query, parse_query, query_string
from .openapi import ENDPOINTS, openapi_schema
from .page import ANSWER_MARKER, ANSWER_MARKER_END, ANSWER_MARKER_START, render_page
from .runs import PAPER_PAGES, cli_line, other_samplers, python_snippet, run_for
from .workers import OverBudget, Overloaded, PoolConfig, WorkerPool

__all__ = ["ServeConfig", "create_app", "compute_answer"]

MAX_QUERY = 2048
MAX_BODY = 8192
#: seconds a task stopped at its budget is answered "over budget" again without rerunning
OVER_BUDGET_MEMORY = 30.0


@dataclass(frozen=True)
class ServeConfig:
    """Attributes:
    budget: seconds a request may take (its work is stopped past it).
    workers: worker processes.
    memory_mb: address-space limit of each worker (MiB).
    max_waiting: tasks that may wait for a worker before requests are refused (503).
    cache_size: answers kept.
    """

    budget: float = 20.0
    workers: int = 3
    memory_mb: int = 3072
    max_waiting: int = 200
    cache_size: int = 512

    def __post_init__(self) -> None:
        if not 0 < self.budget <= 3600:
            raise ValueError(f"budget must be in (0, 3600] seconds, got {self.budget}")


class _State:
    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.pool = WorkerPool(PoolConfig(config.workers, config.memory_mb, config.max_waiting))
        self.cache: OrderedDict[tuple, dict[str, Any]] = OrderedDict()
        # (several parts: a pathlib.Path on 3.10, the typeshed Traversable takes one there)
        self.static = {name: resources.files(__package__).joinpath(  # type: ignore[call-arg]
                           "static", name).read_bytes()
                       for name in ("style.css", "page.js")}
        self.docs = _docs_pages()

    async def task(self, name: str, q: Query, arg: Any, *, heavy: bool,
                   deadline: float) -> dict[str, Any]:
        key = (name, q.key(), arg)
        if key in self.cache:
            self.cache.move_to_end(key)
            hit = self.cache[key]
            if "over" not in hit:
                return hit
            if time.monotonic() < hit["over"]:  # stopped at its budget a moment ago
                raise OverBudget("ran past the time budget a moment ago")
        try:
            out = await self.pool.run(name, asdict(q), arg, heavy=heavy, deadline=deadline)
        except OverBudget:
            self._keep(key, {"over": time.monotonic() + OVER_BUDGET_MEMORY})
            raise
        if "error" not in out or out["error"].get("field") != "budget":
            self._keep(key, out)
        return out

    def _keep(self, key: tuple, value: dict[str, Any]) -> None:
        self.cache[key] = value
        self.cache.move_to_end(key)
        while len(self.cache) > self.config.cache_size:
            self.cache.popitem(last=False)


def _docs_pages() -> dict[str, str]:
    """The papers' docs pages (markdown), when privamp runs from a source checkout."""
    root = Path(__file__).resolve().parents[3] / "docs"
    pages = {}
    for _, page in (*PAPER_PAGES, ("", "support")):
        path = root / f"{page}.md"
        if path.is_file():
            pages[page] = path.read_text()
    return pages


def _over(what: str, budget: float) -> str:
    return (f"{what}: cancelled, over the {budget:g} s budget of a request (the server's "
            "--budget); ask for fewer steps or points, or raise the budget")


async def compute_answer(state: _State, q: Query, parts: tuple[str, ...], *,
                         started: float | None = None,
                         progress: Callable[[str, int, int], None] | None = None,
                         ) -> dict[str, Any]:
    """The answer's ``parts`` (``interval``, ``rows``, ``curve``, ``calibrate``), computed
    concurrently before the request's deadline (``started`` + the budget).

    ``progress(name, done, total)`` is called as each task ends.

    Raises:
        FieldError: a bad input (the interval's, or calibration's when alone).
        Overloaded: the server is too busy.
    """
    budget = state.config.budget
    t0 = time.monotonic() if started is None else started
    deadline = t0 + budget
    run = run_for(q)  # a bad combination is refused before any work
    jobs: dict[str, Any] = {}
    if "interval" in parts:
        jobs["interval"] = state.task("interval", q, None, heavy=False, deadline=deadline)
    if "curve" in parts:
        jobs["curve"] = state.task("curve", q, None, heavy=True, deadline=deadline)
    if "calibrate" in parts and q.target_epsilon is not None:
        jobs["calibrate"] = state.task("calibrate", q, None, heavy=True, deadline=deadline)
    if "rows" in parts:
        for s in other_samplers(q):
            jobs[f"row:{s}"] = state.task("row", q, s, heavy=True, deadline=deadline)
    if progress is not None:
        total, done = len(jobs), [0]

        async def tracked(name: str, job: Any) -> Any:
            try:
                return await job
            finally:
                done[0] += 1
                progress(name, done[0], total)

        jobs = {k: tracked(k, job) for k, job in jobs.items()}
    results = await asyncio.gather(*jobs.values(), return_exceptions=True)
    got: dict[str, Any] = dict(zip(jobs, results, strict=True))
    for r in got.values():
        if isinstance(r, Overloaded):
            raise r
        if isinstance(r, BaseException) and not isinstance(r, OverBudget):
            raise r
    answer: dict[str, Any] = {"inputs": asdict(q), "delta": q.delta, "budget": budget}
    if "interval" in got:
        r = got["interval"]
        if isinstance(r, OverBudget):
            answer["refused"] = _over("the interval", budget)
        elif "error" in r:
            raise FieldError(r["error"]["field"], r["error"]["message"])
        else:
            answer["interval"] = r["ok"]
    rows = []
    if "rows" in parts:
        mine = answer.get("interval")
        if mine is not None:
            rows.append({"sampler": q.sampler if q.source == "sampler" else "your loader",
                         "this": True, **mine})
        for key, r in got.items():
            if key.startswith("row:"):
                name = key[4:]
                rows.append({"sampler": name, "note": _over(name, budget)}
                            if isinstance(r, OverBudget) else r.get("ok") or
                            {"sampler": name, "note": r["error"]["message"]})
        answer["rows"] = rows
        answer["poisson_upper"] = next(
            (r["upper"]["value"] for r in rows if r["sampler"] == "poisson" and r.get("upper")),
            None)
    for part in ("curve", "calibrate"):
        if part in got:
            r = got[part]
            if isinstance(r, OverBudget):
                answer[part] = {"error": _over(part, budget)}
            elif "error" in r:
                if part == "calibrate" and parts == ("calibrate",):
                    raise FieldError(r["error"]["field"], r["error"]["message"])
                answer[part] = {"error": r["error"]["message"]}
            else:
                answer[part] = r["ok"]
    answer["cli"] = cli_line(q, run)
    answer["python"] = python_snippet(q, run)
    answer["share"] = "/?" + query_string(q)
    answer["elapsed"] = time.monotonic() - t0
    return answer


def _bad(field: str, message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": {"field": field, "message": message}}, status_code=status)


async def _params(request: Request) -> dict[str, Any]:
    """The request's fields: its query string, or (POST) its JSON object.

    Raises:
        FieldError: a body that is not a JSON object, or too large.
    """
    if request.method == "POST":
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                raise FieldError("body", f"the request body must be at most {MAX_BODY} bytes")
        try:
            data = json.loads(body or b"{}")
        except (ValueError, UnicodeDecodeError):
            raise FieldError("body", "the request body must be a JSON object of fields") \
                from None
        if not isinstance(data, dict):
            raise FieldError("body", "the request body must be a JSON object of fields")
        return data
    params = request.query_params
    for k in params:
        if len(params.getlist(k)) > 1:
            raise FieldError(k, f"{k} is given more than once")
    return dict(params)


def create_app(config: ServeConfig | None = None) -> _Limits:
    """The application (its worker pool starts with the app's lifespan).

    Args:
        config: the budgets and sizes (default :class:`ServeConfig`).

    Returns:
        A Starlette application for uvicorn.
    """
    state = _State(config or ServeConfig())

    @asynccontextmanager
    async def lifespan(app: Starlette):  # noqa: ANN202
        await state.pool.start()
        yield
        await state.pool.close()

    async def page(request: Request) -> Response:
        raw: dict[str, Any] = {}
        budget = state.config.budget
        try:
            raw = await _params(request)
            if not raw:
                return HTMLResponse(render_page({}, budget=budget, version=__version__))
            q = parse_query(raw)
            t0 = time.monotonic()
            first = await compute_answer(state, q, ("interval",), started=t0)
        except FieldError as exc:
            html = render_page(raw, error={"field": exc.field, "message": exc.message},
                               budget=budget, version=__version__)
            return HTMLResponse(html, status_code=400)
        except Overloaded as exc:
            html = render_page(raw, error={"field": "form", "message": str(exc)},
                               budget=budget, version=__version__)
            return HTMLResponse(html, status_code=503, headers={"Retry-After": "5"})
        if first.get("refused"):
            return HTMLResponse(render_page(raw, answer=first, budget=budget,
                                            version=__version__), status_code=408)
        return StreamingResponse(_stream(raw, q, t0), media_type="text/html")

    async def _stream(raw: dict[str, Any], q: Query, t0: float) -> AsyncIterator[str]:
        """The page in pieces: the form and a progress list at once, a line as each part
        of the answer ends, then the answer (the interval is already known to be good)."""
        budget = state.config.budget
        head, tail = render_page(raw, answer={"marker": True}, budget=budget,
                                 version=__version__).split(ANSWER_MARKER)
        yield head + '<ol id="progress-log" class="note">'
        events: asyncio.Queue = asyncio.Queue()
        work = asyncio.ensure_future(compute_answer(
            state, q, ("interval", "rows", "curve", "calibrate"), started=t0,
            progress=lambda name, k, n: events.put_nowait((name, k, n))))
        def line(name: str, k: int, n: int) -> str:
            return (f"<li>{escape(name.replace('row:', 'sampler '))}: done ({k} of {n}, "
                    f"{time.monotonic() - t0:.1f} s of the {budget:g} s budget)</li>")

        while not work.done():
            getter = asyncio.ensure_future(events.get())
            await asyncio.wait({getter, work}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield line(*getter.result())
            else:
                getter.cancel()
        while not events.empty():
            yield line(*events.get_nowait())
        yield "</ol><style>#progress-log{display:none}</style>"
        try:
            answer = work.result()
        except (FieldError, Overloaded) as exc:
            yield f'<p class="err" id="err-form">{escape(str(exc))}</p>' + tail
            return
        yield render_page(raw, answer=answer, budget=budget,
                          version=__version__).split(ANSWER_MARKER_START)[1].split(
                              ANSWER_MARKER_END)[0] + tail

    def api(parts: tuple[str, ...]):  # noqa: ANN202
        async def endpoint(request: Request) -> Response:
            try:
                q = parse_query(await _params(request))
                answer = await compute_answer(state, q, parts)
            except FieldError as exc:
                return _bad(exc.field, exc.message)
            except Overloaded as exc:
                return JSONResponse({"error": {"field": "server", "message": str(exc)}},
                                    status_code=503, headers={"Retry-After": "5"})
            if answer.get("refused"):
                return _bad("budget", answer["refused"], 408)
            if "calibrate" in parts and isinstance(answer.get("calibrate"), dict) and \
                    "error" in answer["calibrate"]:
                return _bad("budget", answer["calibrate"]["error"], 408)
            return JSONResponse(answer)
        return endpoint

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in state.static:
            return PlainNotFound()
        kind = "text/css" if name.endswith(".css") else "text/javascript"
        return Response(state.static[name], media_type=kind)

    async def docs(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in state.docs:
            return HTMLResponse("<p>This docs page is not bundled with this install; see the "
                                "project's docs/ folder.</p>", status_code=404)
        return HTMLResponse(f"<!doctype html><meta charset=utf-8><title>{name}</title>"
                            f"<pre style='white-space:pre-wrap;max-width:900px'>"
                            f"{escape(state.docs[name])}</pre>")

    async def schema(request: Request) -> Response:
        return JSONResponse(openapi_schema(__version__))

    async def api_docs(request: Request) -> Response:
        rows = "".join(f"<li><code>GET|POST /api/v1/{name}</code>: {escape(text)}</li>"
                       for name, (_, text) in ENDPOINTS.items())
        return HTMLResponse(f"<!doctype html><meta charset=utf-8><title>privamp API</title>"
                            f"<h1>privamp JSON API</h1><ul>{rows}</ul><p>Fields and ranges: "
                            f"<a href='/api/openapi.json'>the OpenAPI schema</a>.</p>")

    routes = [Route("/", page, methods=["GET"]),
              Route("/static/{name}", static), Route("/docs/{name}", docs),
              Route("/api/openapi.json", schema), Route("/api/docs", api_docs)]
    for name, (parts, _) in ENDPOINTS.items():
        routes.append(Route(f"/api/v1/{name}", api(parts), methods=["GET", "POST"]))
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.serve = state
    return _Limits(app)


def PlainNotFound() -> Response:  # noqa: N802 - a response factory
    """A 404 in one line."""
    return JSONResponse({"error": {"field": "path", "message": "not found"}}, status_code=404)


class _Limits:
    """ASGI middleware: refuse an over-long query string or a declared body over the limit
    (413/414) before the application reads it."""

    def __init__(self, app: Starlette) -> None:
        self.app = app
        self.state = app.state

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            if len(scope.get("query_string", b"")) > MAX_QUERY:
                await _send_json(send, 414, "query", f"the query string must be at most "
                                 f"{MAX_QUERY} bytes")
                return
            for k, v in scope.get("headers", []):
                if k == b"content-length" and (not v.isdigit() or int(v) > MAX_BODY):
                    await _send_json(send, 413, "body", f"the request body must be at most "
                                     f"{MAX_BODY} bytes")
                    return
        await self.app(scope, receive, send)


async def _send_json(send: Any, status: int, field: str, message: str) -> None:
    body = json.dumps({"error": {"field": field, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
