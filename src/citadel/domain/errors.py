"""Domain errors.

DomainError
├── InvalidValue        a value object refused its fields
└── LimitExceeded       an input is over a configured bound
"""


class DomainError(Exception):
    """Base of every error raised by the domain layer."""


class InvalidValue(DomainError, ValueError):
    """A value object was built with fields that break its invariants."""


class LimitExceeded(DomainError):
    """An input is over a configured limit."""
