"""Clocks: the system's, and a fixed one for tests."""

from __future__ import annotations

from datetime import UTC, datetime


class SystemClock:
    def now_iso(self) -> str:
        return datetime.now(UTC).isoformat(timespec="seconds")


class FixedClock:
    def __init__(self, iso: str = "2026-01-01T00:00:00+00:00") -> None:
        self.iso = iso

    def now_iso(self) -> str:
        return self.iso
