"""Run candidate programs under limits (see base.py for the interface, docs/sandbox.md).

`open_sandbox` is the only entry point; the backends and layers are imported when it is called, because the
sandboxed child imports modules of this package under a bare interpreter and must not pay for the parent's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from os import PathLike

# Not typing.TYPE_CHECKING: the sandboxed child imports this package and must start fast.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from concurrent.futures import Future

    from gate.sandbox.base import Limits, Sandbox
    from gate.sandbox.detect import ZygoteNeeds
    from gate.sandbox.runner import Layers


class Ahead:
    """What starts before the sandbox opens, once the isolation layers are found (`layers_found_ahead`): the
    zygotes for the hash seeds the runs will use, and what they share that needs no sandbox yet."""

    def __init__(self, needs: Future[ZygoteNeeds]) -> None:
        self._needs = needs

    def zygotes(self, seeds: Sequence[int]) -> None:
        """Start the zygotes for `seeds`, which the caller knows its runs will use (from the policy): their
        interpreters start while the caller reads its input (gate/sandbox/zygote.py)."""
        self._needs.add_done_callback(lambda done: _start_zygotes(done, seeds))

    def framework(self, names: Sequence[str], path: Sequence[str], seed: int = 0) -> None:
        """Have the zygote started for `seed` (by `zygotes`; the suite's runs have seed 0) import the test
        framework `names` from `path`, in the network namespace its runs will share, as `open_sandbox`'s
        `framework` asks once it opens: its import (pytest's: most of a zygote's start) goes while the gate
        makes the suite's trees, not while the suite's first runs wait for it."""
        self._needs.add_done_callback(lambda done: _share_framework(done, names, path, seed))


@contextmanager
def layers_found_ahead() -> Iterator[Ahead]:
    """A block in which the isolation layers are already being found out (in a thread of its own) for the
    `open_sandbox` called in it (gate/sandbox/detect.py), with what can start before it opens (`Ahead`). The
    zygotes no sandbox took are stopped on leaving the block."""
    from gate.sandbox import detect, zygote

    try:
        with detect.found_ahead() as needs:
            yield Ahead(needs)
    finally:
        zygote.stop_ahead()


def _start_zygotes(needs: Future[ZygoteNeeds], seeds: Sequence[int]) -> None:
    """Start the zygotes for `seeds` with what the layers found (none when finding them failed: `open_sandbox`
    says why)."""
    from gate.sandbox import zygote

    if seeds and needs.exception() is None:
        interpreter, paths, seccomp_program, _ = needs.result()
        zygote.start_ahead(interpreter, paths, seccomp_program, seeds)


def _share_framework(needs: Future[ZygoteNeeds], names: Sequence[str], path: Sequence[str], seed: int) -> None:
    from gate.sandbox import namespaces, zygote

    if needs.exception() is None:
        interpreter, paths, seccomp_program, on = needs.result()
        zygote.share_ahead(interpreter, paths, seccomp_program, seed,
                           {**namespaces.before_root(on), "framework": list(names), "framework_path": list(path)})


def open_sandbox(limits: Limits, require: Sequence[str] = (), prefer_zygote: bool = True,
                 hide: Sequence[str] = (), readonly: Sequence[str | PathLike[str]] = (),
                 sites: Sequence[str | PathLike[str]] = (), recall: bool = True,
                 framework: tuple[Sequence[str], Sequence[str]] = ((), ())) -> Sandbox:
    """Detect the isolation layers that work here and return a sandbox using the best of them.

    `limits` are the defaults the caller will put in its requests (checked here for sanity). With a mount
    namespace every run sees an allow-listed root (the interpreter and its library, nothing else of the
    host): `readonly` adds absolute host paths (directories or files; a repository's installed environment)
    that every run sees read-only at the same path. `hide` names directories and files that no run may see
    (a repository being scored, a hidden cases file): covered wherever they would be in reach (inside a
    `readonly` directory). `sites` are the site directories among them (the repository's environment, built
    from the base): a run with one on its import path processes its `.pth` files as `site` does
    (gate/sandbox/startup.py); no other import root is read so. `framework` is a test framework many runs
    import (module names, and the folders among `readonly` it comes from): each zygote imports it once, for
    the runs that ask for it (RunRequest.framework). Raises gate.errors.MissingLayers (exit 3)
    naming every layer in `require` that is not available, and gate.errors.BadInput for a name that is not a
    layer or a `readonly` path that is not an existing absolute path. What the layers' probes found is
    remembered between gates (as root, while nothing it depends on changes: gate/sandbox/detect.py);
    `recall=False` probes afresh.
    """
    import os

    import msgspec

    from gate.errors import BadInput, GateFailure, MissingLayers
    from gate.sandbox import detect, registry, runner, scripts
    from gate.sandbox.base import LAYERS

    unknown = [name for name in require if name not in LAYERS]
    if unknown:
        raise BadInput(f"unknown isolation layer(s) {', '.join(unknown)}; known: {', '.join(LAYERS)}",
                       key="require")
    if limits.wall_s <= 0 or limits.output_bytes <= 0:
        raise BadInput("sandbox limits must be positive", key="limits")
    # (with the programs the environment installed beside its scripts, which a run's bin links to)
    extra = [os.fspath(path) for path in readonly]
    extra += scripts.programs([os.fspath(path) for path in sites]).values()
    wrong = [path for path in extra if not os.path.isabs(path) or not os.path.exists(path)]
    if wrong:
        raise BadInput(f"read-only sandbox path(s) {', '.join(wrong)}: expected existing absolute paths",
                       key="readonly")
    layers = msgspec.structs.replace(detect.layers(prefer_zygote, recall),
                                     sites=tuple(os.fspath(path) for path in sites),
                                     framework=tuple(framework[0]), framework_path=tuple(framework[1]))
    if layers.mountns and extra:
        layers = msgspec.structs.replace(layers, root=detect.within_none([*layers.root, *extra]))
    if layers.mountns and hide:
        layers = msgspec.structs.replace(layers, hide=(*layers.hide, *detect.hideable(layers.interpreter, hide)))
    try:  # (the runs are killed through pidfds: gate/sandbox/zygote.py's StatusHandle)
        os.close(os.pidfd_open(os.getpid()))
    except OSError as exc:
        _release(layers)
        raise GateFailure(f"pidfd_open fails here ({exc.strerror}): the sandbox kills a run only through a pidfd "
                          "of it, so that no kill reaches a process that got the run's pid since; it needs Linux "
                          "5.3 or later, with pidfd_open and pidfd_send_signal allowed by the container's seccomp "
                          "profile") from exc
    covered = [(path, place) for path in extra for place in layers.hide
               if os.path.commonpath([os.path.realpath(path), place]) == place]
    if covered:
        _release(layers)
        path, place = covered[0]
        raise BadInput(f"{path} is inside {place} ({_hidden_as(place)}), which no run may see, so no run could "
                       "read it: keep the gate's cache elsewhere, or run the gate from another directory",
                       key="GATE_CACHE_DIR")
    missing = tuple((name, layers.isolation[name].removeprefix("off: ")) for name in require
                    if layers.isolation[name].startswith("off"))
    if missing:
        _release(layers)
        raise MissingLayers(missing)
    backend = "zygote" if prefer_zygote else "fresh-interpreter"
    return runner.LayeredSandbox(registry.BACKENDS[backend](layers), layers)


def _release(layers: Layers) -> None:
    """Give back what detecting the layers took (the uids' locks, the cgroups) when no sandbox opens."""
    if layers.cgroups:
        layers.cgroups.close()
    if layers.uids:
        layers.uids.close()


def _hidden_as(place: str) -> str:
    """What a place hidden from every run is, in the words of the refusal of a path inside it."""
    import os

    if place == os.path.realpath(os.getcwd()):
        return "the gate's working directory"
    for name in ("GITHUB_WORKSPACE", "RUNNER_TEMP"):
        if os.environ.get(name) and place == os.path.realpath(os.environ[name]):
            return f"${name}"
    return "the repository scored, or the folder of a hidden-cases file"
