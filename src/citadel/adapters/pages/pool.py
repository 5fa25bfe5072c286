"""Page renders bounded in time, memory and number waiting: a pool of worker processes.

pdfium has no time or complexity bound of its own (a one-page mesh shading or a
million path operators takes it a minute), and it cannot be stopped from inside
a thread. So renders run in worker processes (``worker``), each at a lowered CPU
priority and with a capped address space; a render that does not answer within
``timeout_s`` has its process killed and a fresh one started. Each worker is
driven by one thread of the pool's own (never a request thread), taking jobs from
one queue; a job's result is a ``concurrent.futures.Future`` that an async caller
awaits. When ``workers + queue`` jobs are already waiting, a new one raises
``RenderBusy`` at once.

A page that ran past its limits (killed for time, or out of memory, or its worker
died) is remembered by the original's SHA-256 and the page number for
``remember_s`` and refused at once until then, also by the jobs already queued for
it. Rendered pages are kept in an LRU
cache bounded in bytes, so a page shown again does not queue.

``workers=0`` renders in this process, one page at a time on the pool's thread,
with no time or memory bound (tools and tests that need no processes).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import queue
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import citadel
from citadel.adapters.pages.frames import FrameClosed, FrameTimeout, read_frame_by, write_json
from citadel.adapters.pages.render import PdfiumRenderer
from citadel.app.errors import PageUnrenderable, RenderBusy
from citadel.app.ports.pages import PageImage

Observer = Callable[[str, float], None]
"""Told each finished job's outcome (``ok``, ``timeout``, ``memory``, ``died``,
``refused``, ``failed``) and its seconds in a worker."""


@dataclass(frozen=True, slots=True)
class PoolLimits:
    """The pool's bounds; each field's variable and meaning are in the settings table
    (``settings_render``)."""

    workers: int = 2
    queue: int = 8
    timeout_s: float = 10.0
    memory_mb: int = 512
    niceness: int = 10
    remember_s: float = 3600.0
    cache_bytes: int = 32 * 1024 * 1024


@dataclass(slots=True)
class _Job:
    op: str
    pdf: Path
    digest: str
    page: int
    highlight: str | None
    future: Future[Any]


class _Overrun(Exception):
    """The job ran past a limit; ``outcome`` says which (the page is remembered)."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome


_STOP = object()
_STARTUP_S = 20.0


class RenderPool:
    def __init__(self, limits: PoolLimits | None = None, *, observe: Observer | None = None):
        self._limits = limits or PoolLimits()
        self._observe = observe or (lambda outcome, seconds: None)
        self._jobs: queue.SimpleQueue[_Job | object] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._waiting = 0
        self._threads: list[threading.Thread] = []
        self._processes: set[subprocess.Popen[bytes]] = set()
        self._closed = False
        self._refused: OrderedDict[tuple[str, int], tuple[float, str]] = OrderedDict()
        self._digests: OrderedDict[tuple[str, int, int], str] = OrderedDict()
        self._cache: OrderedDict[tuple[str, int, str | None], PageImage] = OrderedDict()
        self._cached = 0
        self._counts: OrderedDict[str, int] = OrderedDict()

    # -- what callers use ---------------------------------------------------------

    def refusal(self, pdf: Path, page: int) -> str | None:
        digest = self._digest(pdf)
        with self._lock:
            return self._refusal(digest, page)

    async def page_count(self, pdf: Path) -> int:
        digest = await self._digest_off_loop(pdf)
        with self._lock:
            known = self._counts.get(digest)
        if known is not None:
            return known
        count: int = await asyncio.wrap_future(self.submit("count", pdf, digest, 0, None))
        with self._lock:
            self._counts[digest] = count
            while len(self._counts) > 4096:
                self._counts.popitem(last=False)
        return count

    async def render(self, pdf: Path, page: int, highlight: str | None = None) -> PageImage:
        digest = await self._digest_off_loop(pdf)
        key = (digest, page, highlight)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        image: PageImage = await asyncio.wrap_future(
            self.submit("render", pdf, digest, page, highlight)
        )
        self._keep(key, image)
        return image

    def submit(
        self, op: str, pdf: Path, digest: str, page: int, highlight: str | None
    ) -> Future[Any]:
        """Queue one job; ``PageUnrenderable`` for a remembered page and ``RenderBusy``
        for a full queue, both at once."""
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RenderBusy(self._retry_after())
            why = self._refusal(digest, page)
            if why is not None:
                raise PageUnrenderable(why)
            if self._waiting >= max(self._limits.workers, 1) + self._limits.queue:
                raise RenderBusy(self._retry_after())
            self._waiting += 1
            self._start_threads()
        self._jobs.put(_Job(op, pdf, digest, page, highlight, future))
        return future

    def worker_ids(self) -> list[int]:
        """The process ids of the workers running now."""
        with self._lock:
            return sorted(process.pid for process in self._processes)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            threads, self._threads = self._threads, []
            processes = list(self._processes)
        for _ in threads:
            self._jobs.put(_STOP)
        for process in processes:  # a render in progress is not waited for
            process.kill()
        for thread in threads:
            thread.join(5)

    # -- the drivers --------------------------------------------------------------

    def _start_threads(self) -> None:
        if self._threads:
            return
        for number in range(max(self._limits.workers, 1)):
            thread = threading.Thread(
                target=self._drive, name=f"citadel-render-{number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _drive(self) -> None:
        local = PdfiumRenderer(cache_bytes=0) if self._limits.workers == 0 else None
        process: subprocess.Popen[bytes] | None = None
        while (job := self._jobs.get()) is not _STOP:
            assert isinstance(job, _Job)
            try:
                if not job.future.set_running_or_notify_cancel():
                    continue  # its caller went away while it waited
                with self._lock:
                    why = self._refusal(job.digest, job.page)
                if why is not None:  # the same page ran past its limits while this waited
                    job.future.set_exception(PageUnrenderable(why))
                    continue
                if local is None and (process is None or process.poll() is not None):
                    try:
                        process = self._spawn()  # its imports are not the job's time
                    except Exception as exc:
                        job.future.set_exception(exc)
                        continue
                started = time.monotonic()
                try:
                    if local is not None:
                        result = _in_process(local, job)
                    else:
                        assert process is not None
                        result = self._ask(process, job)
                except _Overrun as exc:
                    if exc.outcome in ("timeout", "died"):
                        self._stop(process)
                        process = None
                    self._remember(job, str(exc))
                    self._observe(exc.outcome, time.monotonic() - started)
                    job.future.set_exception(PageUnrenderable(str(exc)))
                except Exception as exc:
                    self._observe("failed", time.monotonic() - started)
                    job.future.set_exception(exc)
                else:
                    self._observe("ok", time.monotonic() - started)
                    job.future.set_result(result)
            finally:
                with self._lock:
                    self._waiting -= 1
        self._stop(process)

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        source = str(Path(citadel.__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (source, env.get("PYTHONPATH")) if p)
        limits = self._limits
        command = [sys.executable, "-m", "citadel.adapters.pages.worker"]
        process = subprocess.Popen(
            [*command, str(limits.memory_mb), str(limits.niceness)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            close_fds=True,
        )
        with self._lock:
            self._processes.add(process)
        assert process.stdout is not None
        try:  # its imports, before the first job's time limit starts
            read_frame_by(process.stdout.fileno(), time.monotonic() + _STARTUP_S)
        except (FrameTimeout, FrameClosed):
            self._stop(process)
            raise RuntimeError("a page renderer did not start") from None
        return process

    def _stop(self, process: subprocess.Popen[bytes] | None) -> None:
        if process is None:
            return
        process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()
        with self._lock:
            self._processes.discard(process)

    def _ask(self, process: subprocess.Popen[bytes], job: _Job) -> Any:
        assert process.stdin is not None and process.stdout is not None
        request: dict[str, Any] = {"op": job.op, "pdf": str(job.pdf), "page": job.page}
        if job.highlight:
            request["highlight"] = job.highlight
        deadline = time.monotonic() + self._limits.timeout_s
        fd = process.stdout.fileno()
        what = "counting its pages" if job.op == "count" else f"page {job.page}"
        try:
            write_json(process.stdin, request)
            reply = json.loads(read_frame_by(fd, deadline))
            png = read_frame_by(fd, deadline) if reply.get("ok") and job.op == "render" else b""
        except FrameTimeout:
            raise _Overrun(
                "timeout", f"{what} took longer than {self._limits.timeout_s:g} s to draw"
            ) from None
        except (FrameClosed, BrokenPipeError, ValueError):
            raise _Overrun("died", f"drawing {what} stopped its renderer") from None
        return _result(job, reply, png, self._limits.memory_mb)

    # -- what the pool remembers --------------------------------------------------

    async def _digest_off_loop(self, pdf: Path) -> str:
        """The digest, hashed off the event loop the first time (an original may be
        tens of MB)."""
        known = self._known_digest(pdf)
        return known if known is not None else await asyncio.to_thread(self._digest, pdf)

    def _known_digest(self, pdf: Path) -> str | None:
        stat = pdf.stat()
        with self._lock:
            return self._digests.get((str(pdf), stat.st_mtime_ns, stat.st_size))

    def _digest(self, pdf: Path) -> str:
        known = self._known_digest(pdf)
        if known is not None:
            return known
        stat = pdf.stat()
        key = (str(pdf), stat.st_mtime_ns, stat.st_size)
        sha = hashlib.sha256()
        with pdf.open("rb") as stream:
            while block := stream.read(1 << 20):
                sha.update(block)
        digest = sha.hexdigest()
        with self._lock:
            self._digests[key] = digest
            while len(self._digests) > 1024:
                self._digests.popitem(last=False)
        return digest

    def _refusal(self, digest: str, page: int) -> str | None:
        found = self._refused.get((digest, page))
        if found is None:
            return None
        until, why = found
        if time.monotonic() >= until:
            del self._refused[(digest, page)]
            return None
        return why

    def _remember(self, job: _Job, why: str) -> None:
        with self._lock:
            self._refused[(job.digest, job.page)] = (
                time.monotonic() + self._limits.remember_s,
                why,
            )
            while len(self._refused) > 10_000:
                self._refused.popitem(last=False)

    def _keep(self, key: tuple[str, int, str | None], image: PageImage) -> None:
        with self._lock:
            if len(image.png) > self._limits.cache_bytes or key in self._cache:
                return
            self._cache[key] = image
            self._cached += len(image.png)
            while self._cached > self._limits.cache_bytes:
                _, old = self._cache.popitem(last=False)
                self._cached -= len(old.png)

    def _retry_after(self) -> int:
        return max(1, math.ceil(self._limits.timeout_s))


def _in_process(renderer: PdfiumRenderer, job: _Job) -> Any:
    if job.op == "count":
        return renderer.page_count(job.pdf)
    return renderer.render(job.pdf, job.page, job.highlight)


def _result(job: _Job, reply: dict[str, Any], png: bytes, memory_mb: int) -> Any:
    if reply.get("ok"):
        if job.op == "count":
            return int(reply["count"])
        return PageImage(png, int(reply["width"]), int(reply["height"]), bool(reply["highlighted"]))
    error, message = str(reply.get("error")), str(reply.get("message"))
    if error == "memory":
        raise _Overrun("memory", f"page {job.page} needs more than {memory_mb} MB to draw")
    if error == "no_page":
        raise IndexError(message)
    if error == "unreadable":
        raise ValueError(message)
    raise _Overrun("refused", f"page {job.page} cannot be drawn: {message}")
