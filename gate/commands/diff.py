"""`gate diff OLD.jsonl NEW.jsonl`: which samples newly fail, newly pass or still fail; exit 1 on a
regression."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gate.errors import EXIT_ACCEPTED, EXIT_BLOCKED
from gate.eval.diff import diff_runs
from gate.eval.rows import read_rows


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "diff", help="compare two eval runs sample by sample",
        description="Compare the rows of two `gate eval` runs by sample id. Exits 1 when a sample that "
                    "passed in OLD fails in NEW.")
    parser.add_argument("old", type=Path, metavar="OLD.jsonl", help="rows of the earlier run")
    parser.add_argument("new", type=Path, metavar="NEW.jsonl", help="rows of the later run")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = diff_runs(read_rows(args.old), read_rows(args.new))
    print(result.render(), end="")
    return EXIT_BLOCKED if result.regressed else EXIT_ACCEPTED
