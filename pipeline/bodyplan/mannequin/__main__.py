"""Command line: ``python -m pipeline.bodyplan.mannequin --write PATH``."""

from __future__ import annotations

import argparse

from pipeline.bodyplan.io import save_body_plan
from pipeline.bodyplan.mannequin import mannequin


def main(argv: list[str] | None = None) -> None:
    """Write the mannequin body plan (version-2 JSON) to ``--write PATH``."""
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.bodyplan.mannequin",
        description="Write the mannequin body plan as JSON.",
    )
    parser.add_argument("--write", required=True, metavar="PATH", help="output JSON file")
    args = parser.parse_args(argv)
    path = save_body_plan(mannequin(), args.write)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
