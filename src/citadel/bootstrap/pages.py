"""The page images' wiring: the render pool the settings bound (docs/ui.md)."""

from __future__ import annotations

from citadel.adapters.metrics.prometheus import PrometheusMetrics
from citadel.adapters.pages.pool import PoolLimits, RenderPool
from citadel.config import Settings


def page_images(settings: Settings, metrics: PrometheusMetrics) -> RenderPool:
    """The worker processes drawing page images; they start at the first image asked
    for, and stop when the services close."""
    render = settings.render
    limits = PoolLimits(
        workers=render.workers,
        queue=render.queue,
        timeout_s=render.timeout_s,
        memory_mb=render.memory_mb,
        niceness=render.niceness,
        remember_s=render.remember_s,
    )
    return RenderPool(limits, observe=metrics.page_render)
