"""Fixtures the test modules share: a real sandbox, and the fake GitHub.

A module can set, for its `sandbox`: `SANDBOX_BACKENDS = ("zygote", "fresh-interpreter")` to get each backend
in turn; `SANDBOX_READONLY`, paths bound read-only into every run's root; `SANDBOX_ENVIRON`, variables in the
gate's own environment while the sandbox is open (a secret that no run may be able to read).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate import memo
from gate.sandbox import open_sandbox
from gate.sandbox.base import Limits
from gate.sandbox.runner import LayeredSandbox
from tests import session_support
from tests.fakegithub import FakeGitHub, serve
from tests.init_support import gate_init  # noqa: F401 (a fixture of every module)


def pytest_configure(config: pytest.Config) -> None:
    session_support.start()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers a core. The tests spend much of their time waiting on what they test (a hang's
    timeout, a sandbox's wall limit, an install's subprocesses), so a second worker a core fills that wait:
    the slow tests too (.ci/run), which took 1.2-1.4x as long one worker a core."""
    return 2 * (os.cpu_count() or 1)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--dist loadgroup` (.ci/run's slow tests): keep each `xdist_group` on one worker, so that a group's
    module fixtures (an attacked runner, a release's install, a native build) are made once. xdist marks a
    group by a suffix to the node id written to `_nodeid`, which pytest 9.2 no longer reads (node ids became
    structured: pytest-dev/pytest-xdist#1386), and the groups spread over every worker; write it where the id
    now lives. A no-op where xdist's own suffix took (older pytest) and outside a loadgroup worker."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        groups = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                         for mark in item.iter_markers("xdist_group")})
        if groups and "@" not in item.nodeid.rpartition("]")[2] and hasattr(item, "_id"):
            from _pytest.nodeid import NodeId  # pytest >= 9.2, where `_id` holds the node id

            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")


def pytest_unconfigure(config: pytest.Config) -> None:
    session_support.finish()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    backends = getattr(metafunc.module, "SANDBOX_BACKENDS", None)
    if backends and "sandbox" in metafunc.fixturenames:
        metafunc.parametrize("sandbox", backends, indirect=True, scope="module")


@pytest.fixture(scope="module")
def sandbox(request: pytest.FixtureRequest) -> Iterator[LayeredSandbox]:
    """A real sandbox for the module's tests: the zygote backend, or each of the module's SANDBOX_BACKENDS.
    Each run brings its own limits; these only pass the start-up sanity check."""
    backend = getattr(request, "param", "zygote")
    readonly = getattr(request.module, "SANDBOX_READONLY", ())
    with pytest.MonkeyPatch.context() as patch:
        for key, value in getattr(request.module, "SANDBOX_ENVIRON", {}).items():
            patch.setenv(key, value)
        box = open_sandbox(Limits(), prefer_zygote=backend == "zygote", readonly=readonly)
        assert isinstance(box, LayeredSandbox)
        try:
            yield box
        finally:
            box.close()


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state directory of the test's own, in place of /run/gate (where root remembers what the layer probes
    found and which documents are valid)."""
    folder = tmp_path / "state"
    monkeypatch.setattr(memo, "STATE_DIR", str(folder))
    return folder


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    """The fake GitHub, serving on a local port for one test."""
    with serve() as running:
        yield running
