"""`python -m gate`: the CLI, as the Action runs it."""

from gate.cli import entry

entry()
