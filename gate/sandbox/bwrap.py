"""Layer "bwrap": bubblewrap, for namespaces without root where unprivileged user namespaces work.

As root the gate enters network and mount namespaces itself (several times cheaper than `bwrap --unshare-all`:
docs/benchmarks.md), so bubblewrap is only a candidate when the gate is not root. Its record is imported by the
child (gate/sandbox/stack.py), so what only the gate runs is imported when it runs.
"""

from __future__ import annotations

from gate.sandbox.layer import Layer

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the child imports this module
if TYPE_CHECKING:
    from gate.sandbox.detect import Found


def works() -> str:
    """"" when `bwrap --unshare-all` runs here, else why not."""
    import shutil
    import subprocess

    path = shutil.which("bwrap")
    if path is None:
        return "not installed (apt install bubblewrap)"
    done = subprocess.run([path, "--unshare-all", "--ro-bind", "/", "/", "--die-with-parent", "/bin/true"],
                          capture_output=True, text=True, check=False, timeout=30)
    if done.returncode != 0:
        return "fails here: " + (done.stderr.strip().splitlines() or ["unknown error"])[-1]
    return ""


def describe(root: bool) -> str:
    """How the layer reads in the isolation map."""
    if root:
        return "off: not needed (root enters namespaces directly)"
    why = works()
    return f"off: {why}" if why else "off: works here but unused (without root the gate enters no namespaces)"


def _describe(found: Found) -> str:
    return describe(found.root)


BWRAP = Layer("bwrap", _describe)
