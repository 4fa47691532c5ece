"""`gate policy check|show|schema`: validate a policy file, print the effective policy, print the schemas."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

from gate.errors import EXIT_ACCEPTED, BadInput
from gate.policy.loader import effective_policy_dict, load_policy, policy_schema
from gate.policy.model import ALTERNATE_POLICY_PATH, DEFAULT_POLICY_PATH, Policy
from gate.policy.validation import load_schema

DEFAULT_FILE = Path(DEFAULT_POLICY_PATH)
ALTERNATE_FILE = Path(ALTERNATE_POLICY_PATH)


def register(subparsers: Any) -> None:
    """Add `gate policy` and its three actions."""
    parser = subparsers.add_parser("policy", help="validate or show a policy file",
                                   description="Validate a policy file, or print the policy in effect.")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="validate FILE (exit 0) or print its first error (exit 2)")
    check.add_argument("file", nargs="?", type=Path, metavar="FILE",
                       help=f"the policy file (default: {DEFAULT_FILE}; absent: the default preset applies)")
    check.set_defaults(func=run_check)
    show = actions.add_parser("show", help="print the effective policy after `extends` as YAML")
    show.add_argument("file", nargs="?", type=Path, metavar="FILE",
                      help=f"the policy file (default: {DEFAULT_FILE})")
    show.set_defaults(func=run_show)
    schema = actions.add_parser("schema", help="print the policy file's JSON Schema (for editors)")
    schema.add_argument("--task", action="store_true", help="print the task file's schema instead")
    schema.set_defaults(func=run_schema)


def _load(file: Path | None) -> tuple[Policy, str]:
    """The policy and how to name it; a missing default file means the default preset."""
    if file is None and DEFAULT_FILE.exists() and ALTERNATE_FILE.exists():
        raise BadInput(f"both {DEFAULT_FILE} and {ALTERNATE_FILE} exist: keep one", file=str(ALTERNATE_FILE))
    if file is None and not DEFAULT_FILE.exists() and not ALTERNATE_FILE.exists():
        return load_policy(None), f"no {DEFAULT_FILE}: the default preset applies"
    path = file or (DEFAULT_FILE if DEFAULT_FILE.exists() else ALTERNATE_FILE)
    policy = load_policy(path)
    return policy, f"{path} (extends {policy.extends})"


def run_check(args: argparse.Namespace) -> int:
    """Validate the file; errors surface as BadInput (exit 2) through the CLI."""
    _, described = _load(args.file)
    print(described if described.startswith("no ") else f"ok: {described}")
    return EXIT_ACCEPTED


def run_show(args: argparse.Namespace) -> int:
    """Print the effective policy as YAML that `gate policy check` accepts."""
    policy, described = _load(args.file)
    print(f"# effective policy: {described}")
    print(yaml.safe_dump(effective_policy_dict(policy), sort_keys=False, allow_unicode=True), end="")
    return EXIT_ACCEPTED


def run_schema(args: argparse.Namespace) -> int:
    """Print a schema to save next to the file: `gate policy schema > .github/gate.schema.json`."""
    schema = load_schema("gate.sources", "task.schema.json") if args.task else policy_schema()
    print(json.dumps(schema, indent=2))
    return EXIT_ACCEPTED
