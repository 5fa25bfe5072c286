"""``python -m citadel`` runs the command line."""

from citadel.entrypoints.cli import main

if __name__ == "__main__":
    main()
