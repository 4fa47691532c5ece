"""The sandbox's interface: run one program under limits and say what happened.

It knows nothing of GitHub, policies or penalties. Backends (a warm zygote, a fresh interpreter, ...) live in
their own modules and are chosen by `gate.sandbox.open_sandbox`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import msgspec

from gate.sandbox.stack import RECORDS

# Every isolation layer the sandbox can detect and report, by the name a policy's `require:` uses, in the
# verdict's order: one record each (gate/sandbox/stack.py).
LAYERS = tuple(record.name for record in RECORDS)

class Limits(msgspec.Struct, frozen=True):
    """Bounds for one run. Sizes in bytes so that the sandbox needs no policy to interpret them."""

    wall_s: float = 5.0
    cpu_s: float = 5.0
    memory_bytes: int = 512 * 1024 * 1024
    output_bytes: int = 256 * 1024
    processes: int = 32
    open_files: int = 64
    file_size_bytes: int = 16 * 1024 * 1024
    disk_bytes: int = 64 * 1024 * 1024


class RunRequest(msgspec.Struct, frozen=True):
    """One run: a Python script (run by the sandbox's interpreter) or a plain argv, in a private directory.

    `files` are written into the private working directory before the run; `tree` (a clean export of the code
    under test) is copied there first. Exactly one of `script` and `argv` is set.
    """

    script: str | None = None  # a Python program: one of `harness`, or a path relative to the working directory
    args: tuple[str, ...] = ()
    argv: tuple[str, ...] | None = None  # a non-Python program (looked up on the run's PATH), exec'd
    files: Mapping[str, bytes] = msgspec.field(default_factory=dict)
    tree: Path | None = None
    stdin: bytes = b""
    env: Mapping[str, str] = msgspec.field(default_factory=dict)  # added to the allow-listed environment
    hash_seed: int = 0
    limits: Limits = msgspec.field(default_factory=Limits)
    # The gate's own program (a harness, gate/cases/harness/): its Python files by module file name
    # (`_gate_calls.py`), `script` one of them. They are never written where the run can see them: the run
    # imports them from their code (a zygote compiles each once), starting with the standard library alone on
    # its import path, so that no file of the tree or of the working directory (a `tempfile.py`, a file named
    # like a harness module, a `__pycache__`) is what the harness imports; the import path the tree's code
    # has (`python_path`, the working directory) is the harness's to take once it has imported what it needs
    # (child.TREE_PATH_ENV, gate/sandbox/tree.py).
    harness: Mapping[str, bytes] = msgspec.field(default_factory=dict)
    # Names in `harness` of modules that many runs share: a zygote imports each (all but `script`) once, and its
    # runs use those instead of importing them again. So a module's top level must not depend on the run (its
    # limits, environment or directory). Never the code under test: the zygote itself runs what is named here.
    warm: tuple[str, ...] = ()
    # Standard library modules the program imports: a zygote imports, once for all its runs, those of them it
    # knows to be safe to import in itself (zygote_server.PRELOADABLE) and ignores the others. Only names the
    # program would find in the standard library, not its own modules of the same names (the caller checks).
    preload: tuple[str, ...] = ()
    # The program imports the sandbox's test framework (open_sandbox's `framework`): a run of a zygote gets the
    # modules the zygote imported once, when its own import path finds each of them in the same file
    # (child.FRAMEWORKS); other runs never see them.
    framework: bool = False
    # Stdout, stderr and the result channel go to /dev/null, unread (a served peer, whose answers travel on its
    # channel): the result then has none of them, and no output limit applies.
    discard_output: bool = False
    # Import roots of the program (`sys.path`), besides its working directory: a relative one (a directory of
    # the tree, such as `src`) comes before the working directory, an absolute one (a read-only environment's
    # site-packages outside the run) after the standard library.
    python_path: tuple[str, ...] = ()
    # The working directory (the tree and `files`) read-only to the program, its writes going to /tmp: with a
    # mount namespace only (without one the run's uid owns its copy). For a suite, so that nothing the tests'
    # process writes there (a conftest.py, a pytest.ini) is what pytest reads next.
    read_only_tree: bool = False
    # A network namespace of its own with its loopback device up, and sockets of the Unix and Internet families
    # allowed (seccomp), where the netns layer is on: a test can serve and connect on 127.0.0.1 inside its own
    # run and reach nothing beyond it. Elsewhere every socket stays refused. For a repository's suite.
    loopback: bool = False
    # The program watches its files with an inotify instance made before its first result (the cases' serving
    # harness): from that result on, the gate holds the instance too where it may (Handle.hold_watch), so that
    # the run's last process ends without waiting for the kernel to free the watches (a grace period of 5-25
    # ms, which the close of an instance's last descriptor waits for), and drops it once the run ended, off its
    # way.
    watches: bool = False
    # Called in the gate's process with each piece of the result channel as it arrives, before the run ends (a
    # running count of what the program reports); what the run's result carries is the same either way.
    on_result: Callable[[bytes], None] | None = None


class RunResult(msgspec.Struct, frozen=True):
    """What happened. `result` is what the program wrote on its result channel, separate from stdout."""

    exit_code: int | None
    signal: int | None
    timed_out: bool
    stdout: bytes
    stderr: bytes
    result: bytes | None
    output_truncated: bool = False
    killed_reason: str = ""  # "wall timeout", "cpu limit", "output limit", "memory limit", ...
    wall_s: float = 0.0


# Environment variable naming the file descriptor of the result channel inside a run (write-only; the gate
# reads it after the run, separately from stdout).
RESULT_FD_ENV = "GATE_RESULT_FD"

# In a served call (`Sandbox.run_served`), the environment variable naming the peer's end of its channel to
# the server, and the server's control socket to the gate: connected Unix stream sockets (the case kinds send
# plain data on the channel).
PEER_FD_ENV = "GATE_PEER_FD"


class Sandbox(Protocol):
    """A backend that runs programs. `isolation` lists each layer and how it was (for the verdict)."""

    @property
    def isolation(self) -> Mapping[str, str]: ...

    @property
    def private_tmp(self) -> bool:
        """Whether each run has a /tmp, /dev/shm and System V IPC of its own that die with it, so that nothing
        one run leaves there reaches the next."""
        ...

    def run(self, request: RunRequest) -> RunResult:
        """Run one program to its end or its limits; never raises for anything the program does. Thread-safe:
        several runs may go at once."""
        ...

    def run_served(self, server: RunRequest, message: bytes, peer: RunRequest) -> tuple[RunResult, RunResult]:
        """Run `peer` fresh, joined by one socket to a long-lived trusted server that many calls share, each
        with its own uid, directory and limits: this keeps test code and expected values out of the
        candidate's process (the server runs the tests and calls the candidate, the peer, over the socket).
        `server` starts once (per distinct request) under the same layers and serves call after call
        (gate/sandbox/served.py). The call hands the server `message` and its end of the socket to this
        peer, on its control channel (PEER_FD_ENV): a frame of served.LENGTH + message, with the socket
        attached. It ends when the server answers with one frame (served.KEEP or served.RETIRE, then the
        first result's `result`; the peer is then killed if still running, killed_reason "peer finished"),
        or at the peer's wall limit (timed_out; the server is then replaced). Only for trusted programs that
        keep nothing of one call for the next: the harness, never the code under test."""
        ...

    def prepare(self, hash_seeds: Sequence[int]) -> None:
        """Start now, in the background, what runs under `hash_seeds` will need (a zygote's interpreter), so
        that it starts while the caller does other work; a run never depends on it. Thread-safe."""
        ...

    def warm(self, request: RunRequest, hash_seeds: Sequence[int]) -> None:
        """Make now, in the background, what runs like `request` under `hash_seeds` share (a zygote's import of
        its `preload`, its harness compiled), so that the first of them does not wait for it. A run launched
        after it finds it made (its launch waits for the asking, never for what it makes); none depends on
        it. Thread-safe."""
        ...

    def close(self) -> None: ...
