"""Regenerate every generated file: the docs' tables, the golden files, the JSON Schema.

    .venv/bin/python scripts/regenerate.py          # rewrite what is stale, name each file
    .venv/bin/python scripts/regenerate.py --check  # only name what is stale (exit 1 if any)

What is generated and how is listed once, in `tests/support/generated/` (the tests check the
same list: `tests/test_generated_files.py`). Review the diff before committing it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.generated import stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a generated file is stale")
    args = parser.parse_args(argv)
    found = stale()
    for target, rendered in found:
        if not args.check:
            target.write(rendered)
        print(f"{'stale' if args.check else 'regenerated'}: {target.name}")
    if not found:
        print("every generated file is current")
    return 1 if args.check and found else 0


if __name__ == "__main__":
    sys.exit(main())
