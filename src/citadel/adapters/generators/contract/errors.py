"""Every model-backed generator's errors; the tree and its ``reason`` codes are drawn in
the package docstring.

No message ever holds the API key, the prompt or a passage.
"""

from __future__ import annotations

from citadel.app.errors import AppError, InvalidGeneratorOutput

__all__ = [
    "GeneratorConfigError",
    "GeneratorError",
    "InvalidProviderOutput",
    "ProviderStatusError",
    "ProviderTimeout",
    "ProviderUnavailable",
    "RequestTooLarge",
]


class GeneratorError(AppError):
    """Generation failed; ``reason`` is a stable code, the message is safe to show."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason


class GeneratorConfigError(GeneratorError):
    def __init__(self, message: str) -> None:
        super().__init__("config", message)


class RequestTooLarge(GeneratorError):
    pass


class ProviderUnavailable(GeneratorError):
    pass


class ProviderTimeout(GeneratorError, TimeoutError):
    """The generator's own deadline passed: the answer service reports a generator timeout."""


class ProviderStatusError(GeneratorError):
    def __init__(self, reason: str, message: str, status: int) -> None:
        super().__init__(reason, message)
        self.status = status


class InvalidProviderOutput(GeneratorError, InvalidGeneratorOutput):
    """The provider answered, but not with a usable candidate."""
