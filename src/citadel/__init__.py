"""citadel: answers over technical books with citations the application proves."""

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "citadel"


def package_version() -> str:
    """The installed distribution's version (its metadata: pyproject.toml's ``version``)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # a source tree on sys.path that was never installed
        return "0+unknown"


def __getattr__(name: str) -> str:
    # Read on demand: ``import citadel`` does not pay for a metadata lookup.
    if name == "__version__":
        return package_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
