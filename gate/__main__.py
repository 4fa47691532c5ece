"""`python -m gate`: the CLI, as the Action runs it."""

import gc

from gate.cli import main

code = main()
# The process is about to end: out of the collector's sight, its objects are not all walked once more on the
# way out (a measurable part of a gate check's exit: docs/benchmarks.md). Nothing is lost: files are closed
# where they are written.
gc.freeze()
raise SystemExit(code)
