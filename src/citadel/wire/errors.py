"""What the wire conversions raise on a message that breaks the contract."""

from __future__ import annotations


class InvalidMessage(ValueError):
    """A response broke the contract (an unknown enum value, a ref without evidence)."""
