"""The backends, by name, best first. Each builds a launcher (gate/sandbox/launcher.py) from the chosen
layers."""

from __future__ import annotations

from collections.abc import Callable

from gate.sandbox.fresh import FreshLauncher
from gate.sandbox.launcher import Launcher
from gate.sandbox.runner import Layers
from gate.sandbox.zygote import ZygoteLauncher

BACKENDS: dict[str, Callable[[Layers], Launcher]] = {
    "zygote": lambda layers: ZygoteLauncher(layers.interpreter, layers.import_paths,
                                            layers.seccomp_program if "seccomp" in layers.on else None),
    "fresh-interpreter": lambda layers: FreshLauncher(layers.interpreter, layers.import_paths),
}
