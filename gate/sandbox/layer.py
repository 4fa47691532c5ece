"""The record of one isolation layer: how it is probed, how the verdict describes it, what a run's child config
carries for it, and how the child applies it. Each layer's module holds its record; gate/sandbox/stack.py lists
them all, and detect.py, runner.py and child.py loop over that list.

Standard library only, and nothing but the class at run time: the sandboxed child imports it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the child must not pay for importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

    from gate.sandbox.child import ChildConfig
    from gate.sandbox.detect import Found
    from gate.sandbox.runner import RunSetup
    from gate.sandbox.stack import LayerSettings

    Probe = Callable[[bool], dict[str, str]]
    Describe = Callable[[Found], str]
    Settings = Callable[[RunSetup], LayerSettings]
    Apply = Callable[[ChildConfig, "Run"], None]


class Run:
    """What the child's steps share while they set up one run: its working directory (the stage, until the
    filesystem layer makes the run's own)."""

    __slots__ = ("workdir",)

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir


class Layer:
    """One isolation layer, by the name a policy's `require:` and the verdict's isolation use.

    - `probe(root)` runs in the sandbox interpreter at start-up (gate/sandbox/detect.py; as root when the gate
      is, in a forked process of its own that it may change, and no other probe sees: enter namespaces, cover
      /tmp), and returns, by its name, "" when the
      layer works here or why it does not (and any other finding, by a name of its own). A layer without a
      probe is found out in the gate's process (uid, cgroup) or always works.
    - `describe(found)` is its line in the isolation ("on ...", "off: why", a detail).
    - `settings(setup)` is the part of a run's child config it owns (gate/sandbox/stack.py LayerSettings),
      built by the runner for every run.
    - `apply` is the child's step for it, in stack.APPLIED's order; None when the layer is applied by another
      step (the namespaces are entered together) or is not the child's (a backend).

    A probed layer that works is among the ones the runs use (runner.Layers.on).
    """

    __slots__ = ("apply", "describe", "name", "probe", "settings")

    def __init__(self, name: str, describe: Describe, probe: Probe | None = None, settings: Settings | None = None,
                 apply: Apply | None = None) -> None:
        self.name = name
        self.describe = describe
        self.probe = probe
        self.settings = settings
        self.apply = apply

    def __repr__(self) -> str:
        return f"Layer({self.name!r})"


def switch(why_off: str, on: str = "on") -> str:
    """A layer's line: `on` when `why_off` is empty, else "off: <why_off>"."""
    return on if not why_off else f"off: {why_off}"
