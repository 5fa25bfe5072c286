"""A page worker: ``python -m citadel.adapters.pages.worker MEMORY_MB NICE``.

It renders and counts the pages the pool (``pool``) asks for, one at a time,
reading requests from stdin and writing replies to stdout (``frames``). Before
the first request it lowers its CPU priority (``os.nice``) so request threads keep
the cores, and caps its address space (``RLIMIT_AS``) so a page that needs more
memory fails here (``MemoryError``, or pdfium refusing) rather than in the server.
The wall-clock limit is the pool's: it kills a worker that does not answer in time;
and a worker dies with the server (``PR_SET_PDEATHSIG`` on Linux).
"""

from __future__ import annotations

import os
import resource
import signal
import sys
from pathlib import Path
from typing import IO, Any

from citadel.adapters.pages.frames import read_frame, write_frame, write_json
from citadel.adapters.pages.render import PdfiumRenderer

_PR_SET_PDEATHSIG = 1


def serve(requests: IO[bytes], replies: IO[bytes], renderer: PdfiumRenderer) -> None:
    """Answer requests until stdin closes."""
    import json

    while (frame := read_frame(requests)) is not None:
        request: dict[str, Any] = json.loads(frame)
        png = b""
        try:
            pdf = Path(request["pdf"])
            if request["op"] == "count":
                reply: dict[str, Any] = {"ok": True, "count": renderer.page_count(pdf)}
            else:
                image = renderer.render(pdf, int(request["page"]), request.get("highlight"))
                png = image.png
                reply = {
                    "ok": True,
                    "width": image.width,
                    "height": image.height,
                    "highlighted": image.highlighted,
                }
        except MemoryError:
            reply = {"ok": False, "error": "memory", "message": "over the memory limit"}
        except IndexError as exc:
            reply = {"ok": False, "error": "no_page", "message": str(exc)}
        except (ValueError, OSError) as exc:
            reply = {"ok": False, "error": "unreadable", "message": str(exc)}
        except Exception as exc:  # pdfium's own errors: the page is not drawn
            reply = {"ok": False, "error": "failed", "message": f"{type(exc).__name__}: {exc}"}
        write_json(replies, reply)
        if png:
            write_frame(replies, png)


def _die_with_parent() -> None:
    """Linux: killed when the thread that started it ends (the pool's driver, or the
    whole server killed), so a page is never drawn on for an absent server."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the pool's kill and stdin's end only
        return
    if os.getppid() == 1:  # the parent died before the call above
        sys.exit(0)


def _confine(memory_mb: int, niceness: int) -> None:
    if niceness:
        os.nice(niceness)
    if memory_mb:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str]) -> int:
    memory_mb, niceness = int(argv[0]), int(argv[1])
    import pypdfium2  # noqa: F401  loaded before the memory cap, as every render needs it

    _die_with_parent()
    replies = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the replies
    _confine(memory_mb, niceness)
    write_json(replies, {"ready": True})
    serve(sys.stdin.buffer, replies, PdfiumRenderer(cache_bytes=0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
