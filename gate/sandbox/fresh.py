"""Backend "fresh-interpreter": a new `python -s -S -P` per run (the fallback, slower than the
zygote: docs/benchmarks.md).

Not `-I`: it implies `-E`, which would ignore PYTHONHASHSEED, and the environment is an allow-list anyway. The
new interpreter's first process is a one-run reaper (child.main): it forks the run's leader and reaps whatever
the run leaves, since pid 1 does not reap orphans on every machine (it does not on this one).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from gate.sandbox.launcher import Handle, stop
from gate.sandbox.zygote import StatusHandle, status_pair

if TYPE_CHECKING:
    from gate.sandbox.child import ChildConfig, SharedConfig, WarmConfig

_BOOT = "import sys; sys.path[:0] = sys.argv[2:]; from gate.sandbox.child import main; main()"
_PIPE_DEFAULT = 1 << 16
_PIPE_MAX = 1 << 20


class FreshHandle(StatusHandle):
    """A run whose reaper is a fresh interpreter started with subprocess."""

    def __init__(self, status_fd: int, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        try:
            super().__init__(status_fd, "fresh interpreter")
        except BaseException:
            popen.kill()  # (a run it started may be going, and its reaper waits for it: both go)
            popen.wait()
            raise

    def close(self) -> None:
        """Release the status socket and the pidfd, and collect the reaper (it exits once the run's processes
        are gone)."""
        super().close()
        stop(self._popen)


class FreshLauncher:
    """Starts each run in a new interpreter."""

    def __init__(self, interpreter: str, import_paths: Sequence[str]) -> None:
        self._interpreter = interpreter
        self._paths = list(import_paths)
        # Every reaper is started from this one thread, which lives as long as the launcher: a reaper's
        # parent-death signal fires when the *thread* that started it exits, and a served run outlives the
        # caller's thread that started it.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gate-fresh-spawner")

    def prepare(self, hash_seeds: Sequence[int], shared: SharedConfig) -> None:
        """Nothing to start ahead: each run is an interpreter of its own."""

    def warm(self, hash_seeds: Sequence[int], shared: SharedConfig, ready: WarmConfig) -> None:
        """Nothing to make ahead: each run imports and compiles all it runs."""

    def launch(self, config: ChildConfig, sources: Sequence[int], hash_seed: int) -> Handle:
        """Start one run; `hash_seed` is already in the config's environment, which the interpreter reads."""
        status_r, status_w = status_pair()
        config_r, config_w = os.pipe()
        # subprocess puts the first three on 0, 1 and 2; the others keep their numbers.
        data = json.dumps({**config, "sources": [0, 1, 2, *sources[3:]], "status_fd": status_w}).encode()
        try:
            if len(data) > _PIPE_MAX:
                raise ValueError("run config too large (arguments or environment over 1 MiB)")
            if len(data) > _PIPE_DEFAULT:
                fcntl.fcntl(config_w, fcntl.F_SETPIPE_SZ, _PIPE_MAX)
            os.write(config_w, data)
            os.close(config_w)
            config_w = -1
            popen = self._spawner.submit(
                subprocess.Popen,
                [self._interpreter, "-s", "-S", "-P", "-c", _BOOT, str(config_r), *self._paths],
                stdin=sources[0], stdout=sources[1], stderr=sources[2],
                pass_fds=(*sources[3:], config_r, status_w), env=dict(config["env"]), start_new_session=True,
                close_fds=True).result()
        except BaseException:
            os.close(status_r)
            raise
        finally:
            for fd in (config_r, config_w, status_w):
                if fd >= 0:
                    os.close(fd)
        return FreshHandle(status_r, popen)

    def close(self) -> None:
        """Stop the spawning thread (every run's reaper is collected by its run)."""
        self._spawner.shutdown()
