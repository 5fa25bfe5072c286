"""The page-render settings of ``settings_table``: the worker pool's bounds and each
reader's share of it (docs/ui.md, "Page images and their bounds").

Kept in their own module so the table stays short; the pool's defaults are the
adapter's own (``PoolLimits``).
"""

from __future__ import annotations

from citadel.adapters.pages.pool import PoolLimits
from citadel.setting_kinds import Integer, Number, Setting

_POOL = PoolLimits()

RENDER_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "CITADEL_RENDER_WORKERS",
        "render.workers",
        Integer(minimum=0),
        _POOL.workers,
        "worker processes drawing PDF page images, each at a lowered CPU priority (`0` ="
        " draw in the server's process, one at a time, with no time or memory limit)",
    ),
    Setting(
        "CITADEL_RENDER_QUEUE",
        "render.queue",
        Integer(minimum=0),
        _POOL.queue,
        "page images waiting for a worker beyond those being drawn; past it an image"
        " request is answered 503 `render_busy` with `Retry-After`, at once",
    ),
    Setting(
        "CITADEL_RENDER_TIMEOUT_S",
        "render.timeout_s",
        Number(),
        _POOL.timeout_s,
        "seconds one page may take to draw; its worker is then killed and replaced, and"
        " the page is not tried again for `CITADEL_RENDER_REMEMBER_S`",
    ),
    Setting(
        "CITADEL_RENDER_MEMORY_MB",
        "render.memory_mb",
        Integer(minimum=0),
        _POOL.memory_mb,
        "address space of each render worker, in MiB (`RLIMIT_AS`; `0` = no cap); a page"
        " that needs more is not drawn",
    ),
    Setting(
        "CITADEL_RENDER_NICE",
        "render.niceness",
        Integer(minimum=0),
        _POOL.niceness,
        "how much the render workers lower their CPU priority (`os.nice`)",
    ),
    Setting(
        "CITADEL_RENDER_REMEMBER_S",
        "render.remember_s",
        Number(),
        _POOL.remember_s,
        "seconds a page that ran past its limits is refused at once (the viewer shows"
        " its text with a note)",
    ),
    Setting(
        "CITADEL_HTTP_IMAGE_CONCURRENCY",
        "http.image_concurrency",
        Integer(),
        2,
        "page images one reader may have being drawn at once (429 past it)",
    ),
    Setting(
        "CITADEL_HTTP_IMAGE_RATE_LIMIT",
        "http.image_rate_per_minute",
        Integer(),
        30,
        "page images one reader may ask for per minute (a token bucket; 429 past it),"
        " besides `CITADEL_HTTP_RATE_LIMIT`",
    ),
)
