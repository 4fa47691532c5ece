"""gate: an error-budget merge gate for pull requests written by AI coding bots."""

__version__ = "0.2.0"
# The distribution's name, for pip and PyPI: `gate` on PyPI is an unrelated project. The import package is `gate`.
DISTRIBUTION = "error-budget-gate"
HOME = "https://github.com/error-budget-gate/gate"  # the repository: the Action, releases, docs
# The repository's files on its main branch, at URLs that stay put: the schemas' `$id`, the editors' modeline,
# SchemaStore's catalog entry (gate/generate.py writes the schemas with them).
RAW_MAIN = "https://raw.githubusercontent.com/error-budget-gate/gate/main/"
POLICY_SCHEMA_URL = RAW_MAIN + "gate/policy/schema.json"
