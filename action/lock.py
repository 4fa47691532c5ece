"""The Action's hash-locked requirements (docs/github.md), compiled by uv from pyproject.toml:

- requirements.txt: the gate's dependencies (pyseccomp on Linux among them), for every platform and Python >= 3.11;
- build.txt: what builds the gate (pyproject.toml's [build-system] requires);
- uv.txt: the uv that installs them (the version the dev extra pins).

    .venv/bin/python action/lock.py            # write them (pins already there are kept)
    .venv/bin/python action/lock.py --check    # exit 1 when they differ from what uv compiles now

Both read PyPI. Already pinned versions are kept while pyproject.toml allows them, so --check fails only when
pyproject.toml asks for something the lock files do not hold.
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
COMMAND = ".venv/bin/python action/lock.py"


def inputs() -> dict[str, tuple[list[str], str]]:
    """Each lock file's name -> (uv pip compile's source arguments, the requirements read from stdin)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    build = "\n".join(project["build-system"]["requires"])
    [uv] = [r for r in project["project"]["optional-dependencies"]["dev"] if r.startswith("uv==")]
    return {"requirements.txt": (["pyproject.toml"], ""),
            "build.txt": (["-"], build + "\n"),
            "uv.txt": (["-"], uv + "\n")}


def compile_into(folder: Path) -> None:
    """Compile every lock file into `folder` (starting from the copies there, whose pins uv keeps)."""
    uv = str(Path(sys.executable).with_name("uv"))
    for name, (sources, stdin) in inputs().items():
        subprocess.run([uv, "pip", "compile", "--quiet", "--no-config", "--universal", "--python-version", "3.11",
                        "--generate-hashes", "--custom-compile-command", COMMAND, *sources,
                        "--output-file", str(folder / name)],
                       input=stdin, text=True, check=True, cwd=ROOT)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    if not args.check:
        compile_into(HERE)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        for name in inputs():
            shutil.copyfile(HERE / name, fresh / name)
        compile_into(fresh)
        differ = False
        for name in inputs():
            old, new = (HERE / name).read_text().splitlines(), (fresh / name).read_text().splitlines()
            for line in difflib.unified_diff(old, new, f"action/{name}", f"action/{name} (compiled now)", lineterm=""):
                differ = True
                print(line)
    if differ:
        print(f"action/*.txt do not match pyproject.toml: run {COMMAND}", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
