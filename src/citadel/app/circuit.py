"""A circuit breaker for the generator: stop calling a provider that keeps failing.

After ``threshold`` consecutive provider failures (errors and timeouts, not
refused candidates — those are the model's output, not the provider's
health) the circuit opens: answers degrade at once, without a call, for
``cooldown_s``. Then one trial call is let through (half-open); its success
closes the circuit, its failure opens it again.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable

DEFAULT_THRESHOLD = 5
"""Consecutive failures that open the circuit (``CITADEL_CIRCUIT_FAILURES``)."""
DEFAULT_COOLDOWN_S = 30.0
"""How long an open circuit refuses calls (``CITADEL_CIRCUIT_COOLDOWN_S``)."""


class CircuitState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    def __init__(
        self,
        threshold: int = DEFAULT_THRESHOLD,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if threshold < 1 or cooldown_s <= 0:
            raise ValueError("threshold must be >= 1 and cooldown_s > 0")
        self._threshold = threshold
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_out = False

    @property
    def state(self) -> CircuitState:
        with self._lock:
            return self._state()

    def retry_in(self) -> float:
        """Seconds until a trial call is allowed (0 when calls are allowed now)."""
        with self._lock:
            if self._opened_at is None:
                return 0.0
            return max(0.0, self._opened_at + self._cooldown_s - self._clock())

    def allow(self) -> bool:
        """Whether a call may go out now; in half-open state, only one trial at a time."""
        with self._lock:
            state = self._state()
            if state is CircuitState.CLOSED:
                return True
            if state is CircuitState.HALF_OPEN and not self._trial_out:
                self._trial_out = True
                return True
            return False

    def succeeded(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial_out = False

    def failed(self) -> None:
        with self._lock:
            self._failures += 1
            if self._trial_out or self._failures >= self._threshold:
                self._opened_at = self._clock()
            self._trial_out = False

    def release(self) -> None:
        """After a call that ended without a verdict (cancelled): free the trial slot."""
        with self._lock:
            self._trial_out = False

    def _state(self) -> CircuitState:
        if self._opened_at is None:
            return CircuitState.CLOSED
        if self._clock() - self._opened_at >= self._cooldown_s:
            return CircuitState.HALF_OPEN
        return CircuitState.OPEN
