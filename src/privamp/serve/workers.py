"""A small pool of worker processes that can be stopped: every task runs in a worker with an
address-space limit (``RLIMIT_AS``, the memory budget) and a deadline; a worker that
overruns is killed and replaced.  Two lanes: heavy tasks (comparisons, curves, calibration)
may hold at most ``size - 1`` workers and wait while a light one (a single interval) waits,
so a burst of them never starves the light ones; a bounded queue refuses work beyond it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["WorkerPool", "Overloaded", "OverBudget", "PoolConfig", "worker_main"]


class Overloaded(Exception):
    """Too many requests waiting: try again later."""


class OverBudget(Exception):
    """A task ran past its deadline and its worker was stopped."""


@dataclass(frozen=True)
class PoolConfig:
    """Attributes:
    size: worker processes (>= 2: one is kept for light tasks).
    memory_mb: address-space limit of each worker, in MiB.
    max_waiting: tasks that may wait for a worker before new ones are refused.
    """

    size: int = 3
    memory_mb: int = 3072
    max_waiting: int = 200


def worker_main(memory_mb: int) -> None:  # pragma: no cover - runs in the subprocess
    """A worker: read one JSON task per line on stdin, answer one JSON line on stdout, under
    an address-space limit of ``memory_mb`` MiB."""
    import resource
    import sys

    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    out_stream = os.fdopen(os.dup(1), "w")
    sys.stdout = sys.stderr  # nothing else may write to the answers' stream
    from .work import run_task

    out_stream.write('{"ready": true}\n')
    out_stream.flush()
    for line in sys.stdin:
        try:
            task, fields, arg = json.loads(line)
            out = run_task(task, fields, arg)
        except MemoryError:
            out = {"error": {"field": "budget", "message": "the run needs more memory than "
                             "the server's per-request memory budget"}}
        except Exception as exc:  # noqa: BLE001 - a worker must answer, never die silently
            out = {"error": {"field": "sampler",
                             "message": f"the accountant failed: {type(exc).__name__}"}}
        out_stream.write(json.dumps(out) + "\n")
        out_stream.flush()


class _Worker:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, memory_mb: int) -> _Worker:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1"}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", f"from privamp.serve.workers import worker_main; "
            f"worker_main({int(memory_mb)})",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=env, limit=2**24)
        assert proc.stdout is not None
        if not await proc.stdout.readline():  # the worker has imported privamp
            raise RuntimeError("a worker process failed to start")
        return cls(proc)

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()

    async def ask(self, message: list) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        if not line:
            raise EOFError("the worker stopped")
        return json.loads(line)

    async def stop(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()


class WorkerPool:
    """Worker processes, started by :meth:`start` and stopped by :meth:`close`."""

    def __init__(self, config: PoolConfig | None = None) -> None:
        self.config = config or PoolConfig()
        if self.config.size < 2:
            raise ValueError(f"size must be >= 2 (one worker kept for light tasks), got "
                             f"{self.config.size}")
        self._idle: list[_Worker] = []
        self._all: list[_Worker] = []
        self._cond: asyncio.Condition | None = None
        self._heavy_busy = 0
        self._waiting = 0
        self._light_waiting = 0
        self.replaced = 0
        self._replacing: set[asyncio.Future] = set()
        self._closed = False

    async def start(self) -> None:
        """Start the workers."""
        self._cond = asyncio.Condition()
        self._idle = list(await asyncio.gather(*[
            _Worker.start(self.config.memory_mb) for _ in range(self.config.size)]))
        self._all = list(self._idle)

    async def close(self) -> None:
        """Stop every worker."""
        self._closed = True
        for job in list(self._replacing):
            await job
        for w in self._all:
            w.kill()
        for w in self._all:
            await w.stop()
        self._idle, self._all = [], []

    async def _acquire(self, heavy: bool) -> _Worker:
        assert self._cond is not None
        if self._waiting >= self.config.max_waiting:
            raise Overloaded(f"the server is busy ({self._waiting} requests waiting); try "
                             "again in a few seconds")
        self._waiting += 1
        self._light_waiting += not heavy
        try:
            async with self._cond:
                cap = self.config.size - 1
                await self._cond.wait_for(
                    lambda: bool(self._idle) and (not heavy or (
                        self._heavy_busy < cap and not self._light_waiting)))
                if heavy:
                    self._heavy_busy += 1
                return self._idle.pop()
        finally:
            self._waiting -= 1
            self._light_waiting -= not heavy
            if not heavy and self._cond is not None:  # heavy waiters may go now
                async with self._cond:
                    self._cond.notify_all()

    async def _release(self, worker: _Worker | None, heavy: bool) -> None:
        assert self._cond is not None
        async with self._cond:
            if heavy:
                self._heavy_busy -= 1
            if worker is not None:
                self._idle.append(worker)
            self._cond.notify_all()

    async def _replace(self, dead: _Worker) -> None:
        """Reap a killed worker and start its replacement (in the background)."""
        await dead.stop()
        self._all.remove(dead)
        if not self._closed:
            fresh = await _Worker.start(self.config.memory_mb)
            self._all.append(fresh)
            await self._release(fresh, False)

    async def run(self, task: str, fields: dict[str, Any], arg: Any = None, *,
                  heavy: bool, deadline: float) -> dict[str, Any]:
        """Run ``task`` in a worker before ``deadline`` (a ``time.monotonic()`` instant).

        Raises:
            Overloaded: the queue is full.
            OverBudget: the deadline passed (waiting for a worker counts); the worker
                running it was killed and replaced.
        """
        try:
            worker = await asyncio.wait_for(self._acquire(heavy),
                                            max(deadline - time.monotonic(), 0.001))
        except asyncio.TimeoutError:
            raise OverBudget("waited for a worker until the budget ran out") from None
        try:
            out = await asyncio.wait_for(worker.ask([task, fields, arg]),
                                         max(deadline - time.monotonic(), 0.001))
        except (asyncio.TimeoutError, asyncio.CancelledError, EOFError, OSError,
                ValueError) as exc:
            worker.kill()
            self.replaced += 1
            await self._release(None, heavy)
            job = asyncio.ensure_future(self._replace(worker))
            self._replacing.add(job)
            job.add_done_callback(self._replacing.discard)
            if isinstance(exc, asyncio.CancelledError):
                raise
            if not isinstance(exc, asyncio.TimeoutError):
                return {"error": {"field": "budget", "message": "the worker stopped (over "
                                  "the memory budget?); the request was cancelled"}}
            raise OverBudget("ran past the time budget; the work was stopped") from None
        await self._release(worker, heavy)
        return out
