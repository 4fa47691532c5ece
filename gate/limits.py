"""The policy's run limits as the sandbox's: the one conversion between the two (the sandbox knows nothing of
policies, the policy nothing of the sandbox)."""

from __future__ import annotations

from gate.policy.model import RunLimits
from gate.sandbox.base import Limits


def sandbox_limits(limits: RunLimits) -> Limits:
    """The policy's limits (seconds, MB, KB) as the sandbox's (seconds, bytes)."""
    mib = 1024 * 1024
    return Limits(wall_s=limits.timeout, cpu_s=limits.cpu, memory_bytes=limits.memory_mb * mib,
                  output_bytes=limits.output_kb * 1024, processes=limits.processes,
                  open_files=limits.open_files,
                  file_size_bytes=limits.file_size_mb * mib, disk_bytes=limits.disk_mb * mib)
