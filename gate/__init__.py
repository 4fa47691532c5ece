"""gate: an error-budget merge gate for pull requests written by AI coding bots."""

__version__ = "0.1.0"
# The distribution's name, for pip and PyPI: `gate` on PyPI is an unrelated project. The import package is `gate`.
DISTRIBUTION = "error-budget-gate"
HOME = "https://github.com/error-budget-gate/gate"  # the repository: the Action, releases, docs
# The policy file's JSON Schema at a URL that stays put (the editors' modeline, SchemaStore's catalog entry).
POLICY_SCHEMA_URL = "https://raw.githubusercontent.com/error-budget-gate/gate/main/gate/policy/schema.json"
