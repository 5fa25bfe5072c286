"""citadel: answers over technical books with citations the application proves."""

__version__ = "0.1.0"
