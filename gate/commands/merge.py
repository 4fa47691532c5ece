"""`gate merge ROWS... [--out FILE]`: one report from the rows of every shard of a run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from gate.errors import EXIT_ACCEPTED
from gate.eval.merge import merge_shards
from gate.eval.output import add_report_options, parse_ks, write_report


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "merge", help="merge the rows of the shards of one eval run",
        description="Merge the rows files that `gate eval --shard K/N` wrote for K = 1..N into one run, and "
                    "print its summary. Refuses shards that overlap, that come from different runs, or a "
                    "missing shard.")
    parser.add_argument("rows", type=Path, nargs="+", metavar="ROWS.jsonl", help="one rows file per shard")
    add_report_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ks = parse_ks(args.k)
    rows = merge_shards(args.rows)
    write_report(rows, ks, args.out, args.json, wall_s=None, stream=sys.stdout)
    return EXIT_ACCEPTED
