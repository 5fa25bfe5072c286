"""Print the README's configuration table, or write it, from citadel's settings table.

    .venv/bin/python scripts/settings_table.py           # print the table (markdown)
    .venv/bin/python scripts/settings_table.py --write   # rewrite it in README.md
    .venv/bin/python scripts/settings_table.py --check   # exit 1 when README.md differs

The table is written between the two markers in README.md; every setting is
declared once, in src/citadel/settings_table.py (tests/unit/test_settings.py
fails when the README disagrees with it). ``--write`` and ``--check`` do the same
for src/citadel/setting_choices.py, the names the model families' settings take,
from the composition root's name → builder tables (src/citadel/bootstrap/families.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from citadel.bootstrap.families import choices_module
from citadel.settings_table import markdown_table, table_in, with_table

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CHOICES = ROOT / "src" / "citadel" / "setting_choices.py"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the table in README.md")
    mode.add_argument("--check", action="store_true", help="exit 1 when README.md differs")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        sys.stdout.write(markdown_table())
        return 0
    text = README.read_text(encoding="utf-8")
    readme_current = table_in(text) == markdown_table()
    choices_current = CHOICES.read_text(encoding="utf-8") == choices_module()
    if args.check:
        for path, current in ((README, readme_current), (CHOICES, choices_current)):
            if not current:
                print(f"{path}: stale; run {sys.argv[0]} --write")
        return 0 if readme_current and choices_current else 1
    if not choices_current:
        CHOICES.write_text(choices_module(), encoding="utf-8")
        print(f"{CHOICES}: the model families' names written")
    if not readme_current:
        README.write_text(with_table(text), encoding="utf-8")
        print(f"{README}: settings table written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
