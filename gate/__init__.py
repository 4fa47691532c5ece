"""gate: an error-budget merge gate for pull requests written by AI coding bots."""

__version__ = "0.1.0"
