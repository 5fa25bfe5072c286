"""The page workers' wire: length-prefixed frames over a pipe.

Each frame is a 4-byte big-endian length and that many bytes. A request is one
JSON frame; a reply is one JSON frame, followed for a rendered page by one frame
of PNG bytes. JSON rather than pickle: the parent never unpickles what a process
that has parsed a hostile PDF wrote.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import IO, Any

MAX_FRAME = 256 * 1024 * 1024
"""A reply longer than this is a broken worker, not a page."""


class FrameTimeout(Exception):
    """The deadline passed before the whole frame arrived."""


class FrameClosed(Exception):
    """The other end closed the pipe (a worker that exited or was killed)."""


def write_frame(out: IO[bytes], payload: bytes) -> None:
    out.write(struct.pack(">I", len(payload)) + payload)
    out.flush()


def write_json(out: IO[bytes], value: dict[str, Any]) -> None:
    write_frame(out, json.dumps(value, separators=(",", ":")).encode("utf-8"))


def read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame from a blocking stream, or None at its end (the worker's side)."""
    head = stream.read(4)
    if len(head) < 4:
        return None
    (length,) = struct.unpack(">I", head)
    body = stream.read(length)
    return body if len(body) == length else None


def read_frame_by(fd: int, deadline: float) -> bytes:
    """The next frame from pipe ``fd``, before the monotonic ``deadline`` (the parent's
    side); raises ``FrameTimeout`` or ``FrameClosed``."""
    (length,) = struct.unpack(">I", _read_exact(fd, 4, deadline))
    if length > MAX_FRAME:
        raise FrameClosed(f"a frame of {length} bytes")
    return _read_exact(fd, length, deadline)


def _read_exact(fd: int, size: int, deadline: float) -> bytes:
    parts: list[bytes] = []
    left = size
    while left:
        wait = deadline - time.monotonic()
        if wait <= 0:
            raise FrameTimeout
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            raise FrameTimeout
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            raise FrameClosed("the worker closed its pipe")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)
