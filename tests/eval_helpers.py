"""Helpers for the eval tests: run the real CLI in-process and read what it wrote."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main

# Google's MBPP (CC BY 4.0: mbpp.jsonl and sanitized-mbpp.json), not shipped with the gate: GATE_MBPP_DIR names its
# folder, else ../shared/data/mbpp beside the checkout, as CI lays it out (CONTRIBUTING.md says where to get it).
MBPP_DIR = Path(os.environ.get("GATE_MBPP_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data" / "mbpp")
needs_mbpp = pytest.mark.skipif(not (MBPP_DIR / "mbpp.jsonl").is_file(),
                                reason=f"MBPP data not in {MBPP_DIR}: set GATE_MBPP_DIR (CONTRIBUTING.md)")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_eval(tmp_path: Path, dataset: str, samples: list[dict[str, Any]], *extra: str,
             name: str = "rows") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run `gate eval` on `samples`; returns (rows, summary JSON). Fails the test unless it exits 0."""
    sample_file = write_jsonl(tmp_path / f"{name}-samples.jsonl", samples)
    out, summary = tmp_path / f"{name}.jsonl", tmp_path / f"{name}-summary.json"
    code = main(["eval", "--dataset", dataset, "--samples", str(sample_file), "--out", str(out),
                 "--json", str(summary), *extra])
    assert code == 0
    return read_jsonl(out), json.loads(summary.read_text(encoding="utf-8"))
