"""`gate doctor`: which isolation layers work on this machine, and canary programs that try to get past them;
with `--repo PATH`, also the repository's own suite (policy `tests:`) run at its HEAD as a base is, ahead of
the first PR.

Exit 0 when every canary was blocked, `gate ci` would run a PR's code here and the suite runs; 2 when the
policy's `environment:` names what the repository does not declare (a dependency group, a requirements file:
the error names the key); 3 otherwise (the gate cannot promise its isolation here, a layer `gate ci` requires
is off: the output names it and the fix, or the base's suite does not run in the gate).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path

from gate.errors import EXIT_ACCEPTED, EXIT_GATE_FAILED
from gate.progress import Progress, add_quiet_option, progress_for
from gate.sandbox import open_sandbox
from gate.sandbox.canaries import LIMITS, canaries


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `gate doctor`."""
    parser = subparsers.add_parser("doctor", description=__doc__,
                                   help="show the isolation layers here and test them with canaries")
    parser.add_argument("--fresh", action="store_true",
                        help="test the fresh-interpreter backend instead of the zygote")
    parser.add_argument("--repo", type=Path, metavar="PATH",
                        help="also run this repository's suite (policy tests:) at its HEAD, as every PR's base")
    add_quiet_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the layers and the canaries' outcomes."""
    token = "gate-doctor-" + secrets.token_hex(16)
    os.environ["GATE_DOCTOR_SECRET"] = token  # in the gate's own environment, where a token would be
    sandbox = open_sandbox(LIMITS, prefer_zygote=not args.fresh, recall=False)  # what works now, found afresh
    try:
        print("isolation layers on this machine:")
        isolation = dict(sandbox.isolation)
        for layer, state in isolation.items():
            print(f"  {layer:<18} {state}")
        print(f"canaries ({'fresh-interpreter' if args.fresh else 'zygote'} backend):")
        found = canaries(sandbox, token)
    finally:
        sandbox.close()
        del os.environ["GATE_DOCTOR_SECRET"]
    for canary in found:
        print(f"  {canary.name:<14} {'blocked' if canary.blocked else 'NOT BLOCKED':<12} {canary.detail}")
    missed = [canary.name for canary in found if not canary.blocked]
    print(f"{len(found) - len(missed)} of {len(found)} canaries blocked" +
          (f"; not blocked: {', '.join(missed)}" if missed else ""))
    refused = ci_refuses(isolation)
    print(f"gate ci would refuse to run a PR's code here: {refused}" if refused
          else "gate ci would run a PR's code here (every layer it requires is on)")
    runs = _suite(args.repo, progress_for(sys.stderr, os.environ, args.quiet)) if args.repo is not None else True
    return EXIT_GATE_FAILED if missed or refused or not runs else EXIT_ACCEPTED


def ci_refuses(isolation: Mapping[str, str]) -> str:
    """Why `gate ci` would fail closed with these layers (each layer it requires that is off, why, and the
    fix), or "" when it would run a PR's code."""
    from gate.github.pipeline import CI_LAYERS, ci_layers_fix  # (the GitHub client only when asked)

    off = [name for name in CI_LAYERS if isolation[name].startswith("off")]
    named = "; ".join(f"{name} ({isolation[name].removeprefix('off: ')})" for name in off)
    return f"{named}. {ci_layers_fix(off)}" if off else ""


def _suite(repo: Path, progress: Progress) -> bool:
    """Score HEAD against itself in `repo`: the base's suite runs (and its baseline is cached) as for every
    PR into it (`progress` hears of its steps); print what it found. False when it does not run in the gate."""
    from gate.engine import score
    from gate.errors import BadInput, GateError
    from gate.sources.gitcli import GitError, NotARepository, Repo
    from gate.sources.gitrange import readable, subject_from_commits

    try:
        handle = Repo(repo)
    except NotARepository:
        print(f"the repository's suite: {repo} is not a git checkout")
        return False
    head = "HEAD"
    try:
        with contextlib.closing(handle):
            readable(handle)  # (a checkout git refuses says so: GateError below)
            try:
                head = handle.commit("HEAD").hexsha
            except GitError:
                print(f"the repository's suite: {repo} has no commit")
                return False
            with subject_from_commits(handle, head, head, progress=progress) as found:
                if not found.policy.has_tests:
                    print(f"the repository's suite: none (its policy has no tests:) at {head[:12]}")
                    return True
                verdict = score(found, progress)
    except BadInput:
        raise  # the policy names what the repository lacks (a dependency group): exit 2, naming the key
    except GateError as exc:
        print(f"the repository's suite at {head[:12]}: {exc.render()}")
        return False
    cases = [case for case in verdict.cases if case.kind == "pytest"]
    passed = sum(case.status == "passed" for case in cases)
    print(f"the repository's suite runs in the gate at {head[:12]}: {len(cases)} tests, {passed} passed"
          + (f", {len(cases) - passed} not (charged to no PR: they fail on the base)" if passed < len(cases) else ""))
    for key, note in verdict.facts:  # (how its project was built: the compiler its extensions get here)
        if key in ("compiler", "build"):
            print(f"  {key}: {note}")
    return True
