"""Adapters: the outside world behind the application's ports."""
