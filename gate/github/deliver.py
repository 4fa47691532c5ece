"""The end of a PR run, shared by `gate ci` and `gate publish`: the verdict reaches the artifact, the job
summary, the step outputs and the log first, then GitHub; whatever fails, the exit code says what happened.

Exit codes: 0 accepted, 1 blocked, 3 published only in part (each failure printed with its fix). A read-only
token (a fork's or Dependabot's PR) is not a failure: the verdict waits in the artifact for `gate publish`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import github
import msgspec

from gate import __version__
from gate.errors import EXIT_ACCEPTED, EXIT_BLOCKED, EXIT_GATE_FAILED
from gate.github.actions import append_summary, set_outputs
from gate.github.posting import PERMISSIONS_YAML, Names, Poster, Report, Target, not_gated_report
from gate.policy.model import Policy
from gate.report.annotations import workflow_commands
from gate.report.summary import render_summary
from gate.report.templating import Overrides
from gate.report.terminal import render_terminal
from gate.secret import Secret
from gate.subject import Subject
from gate.verdict import Note, Verdict

READ_ONLY_NOTE = ("This run's token is read-only (a PR from a fork, or from Dependabot), so nothing was "
                  "posted on the PR. The verdict is in the artifact `{path}`; the `workflow_run` publish "
                  "workflow posts it (README, \"PRs from forks and Dependabot\").")
NOT_A_FORK_NOTE = ("Every write was refused, yet the event names a PR of this repository: if it is not from a "
                   "fork, the workflow's token lacks the permissions to post; add to the job:")


class Delivery(msgspec.Struct, frozen=True):
    """Where a run's verdict goes."""

    environ: Mapping[str, str]
    client: github.Github
    target: Target
    names: Names
    token: Secret
    verdict_path: Path
    read_only: bool  # known from the event: do not even try to write


def deliver(delivery: Delivery, verdict: Verdict, report: Report, overrides: Overrides | None = None) -> int:
    """Write the artifact, summary, outputs and log; publish; return the exit code."""
    written = _write_artifact(delivery, verdict)
    print(render_terminal(verdict, color=False, more="the job summary has the whole report"))
    append_summary(delivery.environ, render_summary(verdict, overrides))
    set_outputs(delivery.environ, {"accepted": str(verdict.accepted).lower(), "total": str(verdict.total),
                                   "budget": str(verdict.budget), "verdict": str(delivery.verdict_path),
                                   "gated": "true"})
    # A maintainer's override (a neutral report) lets the job pass too: its own check must not block the merge.
    passed = verdict.accepted or report.state == "neutral"
    code = _post(delivery, report, verdict, EXIT_ACCEPTED if passed else EXIT_BLOCKED)
    return code if written else EXIT_GATE_FAILED


def deliver_not_gated(delivery: Delivery, subject: Subject, policy: Policy, reason: str, *, neutral: bool = False,
                      notes: tuple[str, ...] = ()) -> int:
    """A PR the policy does not gate: a success status and check saying why, no comment, exit 0. A verdict
    with nothing scored and the reason in a note is still the artifact: with a read-only token it is what
    names the PR and its head to `gate publish`, which decides again from the base's policy."""
    report = not_gated_report(reason, neutral=neutral, notes=notes)
    verdict = Verdict(subject_kind=subject.kind, subject_label=subject.label, policy_source=policy.source,
                      mode=policy.mode, budget=policy.budget, total=0, accepted=True,
                      notes=(Note("gate", f"not gated: {reason}"), *(Note("gate", n) for n in notes)),
                      facts=subject.facts,
                      gate_version=__version__)
    written = _write_artifact(delivery, verdict)
    print(f"gate: {report.description}")
    append_summary(delivery.environ, f"**gate**: {report.summary}")
    set_outputs(delivery.environ, {"accepted": "true", "total": "0", "budget": str(verdict.budget),
                                   "verdict": str(delivery.verdict_path), "gated": "false"})
    code = _post(delivery, report, None, EXIT_ACCEPTED)
    return code if written else EXIT_GATE_FAILED


def _write_artifact(delivery: Delivery, verdict: Verdict) -> bool:
    """Write the verdict JSON; a path that cannot be written is one line in the log and the summary, and the
    PR is still published (the comment, status and check carry the verdict)."""
    path = delivery.verdict_path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(verdict.to_json() + "\n", encoding="utf-8")
    except OSError as exc:
        message = f"cannot write the verdict file {path}: {exc.strerror}; check --verdict and RUNNER_TEMP"
        print(f"gate: error: {message}", file=sys.stderr)
        append_summary(delivery.environ, f"**gate could not write the artifact**: {message}")
        return False
    return True


def _post(delivery: Delivery, report: Report, verdict: Verdict | None, code: int) -> int:
    outcome = None if delivery.read_only else Poster(delivery.client, delivery.target,
                                                        delivery.names).post(report)
    if outcome is None or outcome.read_only:
        note = READ_ONLY_NOTE.format(path=delivery.verdict_path)
        if verdict is not None:
            for command in workflow_commands(verdict):  # the log's annotations stand in for the check run's
                print(command)
        print(f"gate: {note}")
        append_summary(delivery.environ, f"> {note}")
        if outcome is not None:  # the event named a PR of this repository: its workflow may lack permissions
            hint = f"{NOT_A_FORK_NOTE}\n{PERMISSIONS_YAML}"
            print(f"gate: {hint}")
            append_summary(delivery.environ, f"> {NOT_A_FORK_NOTE}\n\n```yaml\n{PERMISSIONS_YAML}\n```")
        return code
    for line in outcome.left:
        print(f"gate: {line}")
        append_summary(delivery.environ, f"> **gate**: {line}")
    for line in outcome.messages:
        text = delivery.token.redact(line)
        print(f"gate: error: {text}", file=sys.stderr)
        first, _, rest = text.partition("\n")
        block = f"\n\n```yaml\n{rest}\n```" if rest else ""
        append_summary(delivery.environ, f"**gate could not publish**: {first}{block}\n")
    if outcome.failures:
        done = ", ".join(outcome.done) or "nothing"
        print(f"gate: published {done}; the verdict is in the job summary and {delivery.verdict_path}",
              file=sys.stderr)
        return EXIT_GATE_FAILED
    print(f"gate: published {', '.join(outcome.done)} on {delivery.target.head_sha[:12]}")
    return code
