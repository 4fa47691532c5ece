"""The system data a run's root holds (docs/sandbox.md, "System data"): every path the documentation lists is
there and readable in a run, on both backends and without the mount namespace (the host's own files), and
nothing secret came with it."""

from __future__ import annotations

import ast
import os
import re
import shutil
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from gate.sandbox import detect, registry
from gate.sandbox.base import Limits, RunRequest
from gate.sandbox.canaries import REPORT
from gate.sandbox.runner import LayeredSandbox
from tests import session_support

LIMITS = Limits(wall_s=30.0, cpu_s=10.0)
ROOT = os.geteuid() == 0
DOCS = Path(__file__).resolve().parents[1] / "docs" / "sandbox.md"
# Places that must never be in a run's root, whatever the system data brings along.
# (/etc/passwd and /etc/group are the run's own, of the gate's making: tests/test_sandbox_runenv.py.)
SECRET = ("/etc/ssl/private", "/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/resolv.conf", "/root", "/home")
# For each path given: "missing", or "ok" once it was read (a file's bytes, a folder's entries, each file of
# it that is a link followed).
READER = """
found = {}
for path in sys.argv[1:]:
    try:
        if os.path.isdir(path):
            names = os.listdir(path)
            for name in names:
                if os.path.islink(os.path.join(path, name)):
                    open(os.path.join(path, name), "rb").close()
            found[path] = "ok" if names else "empty"
        else:
            open(path, "rb").read()
            found[path] = "ok"
    except FileNotFoundError:
        found[path] = "missing"
    except OSError as exc:
        found[path] = type(exc).__name__
report(repr(found))
"""
# What a suite does with that data: a zone at import, a default SSL context's CAs, a MIME type, a locale.
USES = """
import datetime, locale, mimetypes, ssl, zoneinfo
chicago = datetime.datetime(2024, 7, 1, 12, tzinfo=zoneinfo.ZoneInfo("America/Chicago"))
report(repr({
    "offset": chicago.utcoffset().total_seconds() / 3600,
    "certificates": ssl.create_default_context().cert_store_stats()["x509_ca"] > 0,
    "mime": mimetypes.guess_type("clip.webm")[0],
    "locale": locale.setlocale(locale.LC_ALL, "C.UTF-8"),
}))
"""


def documented() -> list[str]:
    """The paths docs/sandbox.md lists under "System data" (first column of its table)."""
    text = DOCS.read_text()
    section = text[text.index("**System data.**"):]
    rows = [line for line in section.splitlines()[:40] if line.startswith("| `")]
    assert rows, "docs/sandbox.md lists no system data"
    return [path for row in rows for path in re.findall(r"`(/[^`]+)`", row.split("|")[1])]


def run(box: LayeredSandbox, code: str, *args: str, python_path: tuple[str, ...] = ()) -> dict[str, object]:
    files = {"main.py": (REPORT + textwrap.dedent(code)).encode()}
    result = box.run(RunRequest(script="main.py", args=args, files=files, limits=LIMITS, python_path=python_path))
    assert result.exit_code == 0, result.stderr.decode(errors="replace")
    found: dict[str, object] = ast.literal_eval((result.result or b"").decode())
    return found


@pytest.fixture
def site() -> Iterator[Path]:
    """An environment's site-packages holding the `tzdata` package, with one zone no system has; where a
    user's cache would be (a dropped uid reads it)."""
    place = Path(tempfile.mkdtemp(dir=session_support.directory()))
    folder = place / "site-packages"
    zones = folder / "tzdata" / "zoneinfo" / "Gate"
    zones.mkdir(parents=True)
    for package in (folder / "tzdata", folder / "tzdata" / "zoneinfo", zones):
        (package / "__init__.py").write_text("")
    shutil.copy("/usr/share/zoneinfo/America/Chicago", zones / "Office")
    for path in (place, *place.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield folder
    shutil.rmtree(place)


@pytest.fixture(params=["zygote", "fresh-interpreter", "no mountns"])
def box(request: pytest.FixtureRequest, site: Path) -> Iterator[LayeredSandbox]:
    """A sandbox with every layer here, on each backend, and one without a mount namespace (the host's files);
    `site` bound into its root, as a repository's environment is."""
    full = detect.layers(prefer_zygote=request.param != "fresh-interpreter")
    layers = msgspec.structs.replace(full, root=detect.within_none([*full.root, str(site)])) if full.mountns else full
    if request.param == "no mountns":
        layers = msgspec.structs.replace(full, on=tuple(name for name in full.on if name != "mountns"), root=(),
                                         hide=(), overlay=False)
    sandbox = LayeredSandbox(registry.BACKENDS["fresh-interpreter" if request.param == "fresh-interpreter"
                                               else "zygote"](layers), layers)
    try:
        yield sandbox
    finally:
        sandbox.close()


def test_every_documented_path_the_host_has_is_read_in_a_run(box: LayeredSandbox) -> None:
    listed = documented()
    assert {"/usr/share/zoneinfo", "/etc/localtime", "/usr/lib/locale", "/etc/mime.types"} <= set(listed)
    present = [path for path in listed if os.path.exists(path)]
    assert "/usr/share/zoneinfo" in present, "this machine has no time-zone database to test with"
    found = run(box, READER, *present)
    assert found == dict.fromkeys(present, "ok")


def test_a_suite_reads_zones_certificates_mime_types_and_locales(box: LayeredSandbox) -> None:
    found = run(box, USES)
    assert found == {"offset": -5.0, "certificates": True, "mime": "video/webm", "locale": "C.UTF-8"}


def test_the_tzdata_package_of_an_environment_serves_zones_too(box: LayeredSandbox, site: Path) -> None:
    code = """
        import datetime, zoneinfo
        zone = zoneinfo.ZoneInfo("Gate/Office")
        report(repr({"offset": datetime.datetime(2024, 1, 2, tzinfo=zone).utcoffset().total_seconds() / 3600}))
    """
    assert run(box, code, python_path=(str(site),)) == {"offset": -6.0}


@pytest.mark.skipif(not ROOT, reason="needs root: the allow-listed root comes with the mount namespace")
def test_nothing_secret_comes_with_the_system_data() -> None:
    layers = detect.layers(prefer_zygote=True)
    assert layers.mountns
    box = LayeredSandbox(registry.BACKENDS["zygote"](layers), layers)
    try:
        found = run(box, READER, *SECRET)
        hosts = run(box, "report(repr(open('/etc/hosts').read().split()))")
    finally:
        box.close()
    assert all(found[place] == "missing" for place in SECRET), found
    # The root's /etc/hosts is the gate's, naming localhost alone: none of the host's names and addresses.
    assert {name for name in hosts if not name[0].isdigit() and ":" not in name} == {
        "localhost", "ip6-localhost", "ip6-loopback"}, hosts
    assert not [path for path in layers.root if path.startswith(("/root", "/home", "/etc/ssl/private"))]
