"""Red team: native code. The head's build is the head's own code and its wheel comes back on the result channel,
so it could hand back any bytes as "compiled". What the layer keeps and what a run loads: only an ELF shared
object for this machine that is no file of the tree or of the environment byte for byte (a committed binary, an
installed one), copied into the run's trees by the gate itself; a native file the tree holds is never staged,
whatever its name, and a build never sees one (nor an object file or a static library to link in)."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
import zipfile
from io import BytesIO
from pathlib import Path
from typing import Literal

import pytest

from gate.environment.project import _objects, _Prebuilt, _unpack, overlay
from gate.sandbox import stage
from gate.sandbox.base import RunRequest

CC = shutil.which("gcc") or shutil.which("cc")
needs_compiler = pytest.mark.skipif(CC is None, reason="no C compiler on this machine to make a shared object with")
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def _wheel(entries: dict[str, bytes]) -> bytes:
    data = BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return data.getvalue()


def _compile(folder: Path, *flags: str) -> bytes:
    """A small native file compiled here (a shared object, or with `-c` an object file)."""
    assert CC is not None
    source = folder / "lib.c"
    source.write_text("int answer(void) { return 42; }\n")
    out = folder / "out.bin"
    subprocess.run([CC, *flags, str(source), "-o", str(out)], check=True)
    return out.read_bytes()


@needs_compiler
def test_a_shared_object_the_build_compiled_is_kept_and_one_the_tree_or_environment_holds_is_refused(
        tmp_path: Path) -> None:
    compiled = _compile(tmp_path, "-shared", "-fPIC")
    tree, site = tmp_path / "tree", tmp_path / "site"
    (tree / "vendor").mkdir(parents=True)
    (site / "other").mkdir(parents=True)
    prebuilt = _compile(tmp_path, "-shared", "-fPIC", "-DX=1", "-O2")
    (tree / "vendor" / "blob.bin").write_bytes(prebuilt)  # a committed binary under another name
    installed = prebuilt + b"\0"
    (site / "other" / f"_fast{SUFFIX}").write_bytes(installed)
    layer = tmp_path / "layer"
    layer.mkdir()

    refused, _ = _unpack(_wheel({f"pkg/_speedups{SUFFIX}": compiled, f"pkg/_copied{SUFFIX}": prebuilt,
                              f"pkg/_installed{SUFFIX}": installed, "pkg/__init__.py": b""}),
                      layer, 10**7, prebuilt=_Prebuilt((tree, site)))

    assert sorted(p.relative_to(layer).as_posix() for p in layer.rglob("*") if p.is_file()) == [
        "pkg/__init__.py", f"pkg/_speedups{SUFFIX}"]
    assert sorted(refused) == sorted([
        f"the wheel's pkg/_copied{SUFFIX} is not loaded: it is byte for byte {tree}/vendor/blob.bin, prebuilt, "
        "not compiled by the build",
        f"the wheel's pkg/_installed{SUFFIX} is not loaded: it is byte for byte {site}/other/_fast{SUFFIX}, "
        "prebuilt, not compiled by the build"])


@needs_compiler
def test_what_is_no_shared_object_for_this_machine_is_refused(tmp_path: Path) -> None:
    objects = _compile(tmp_path, "-c", "-fPIC")
    other = bytearray(_compile(tmp_path, "-shared", "-fPIC"))
    order: Literal["little", "big"] = "little" if other[5] == 1 else "big"
    here = int.from_bytes(other[18:20], order)
    other[18:20] = (183 if here != 183 else 62).to_bytes(2, order)  # aarch64's, or x86-64's on an aarch64
    layer = tmp_path / "layer"
    layer.mkdir()

    refused, _ = _unpack(_wheel({f"a{SUFFIX}": b"print('not native')\n", f"b{SUFFIX}": objects,
                              f"c{SUFFIX}": bytes(other), "d.pyd": b"MZ", "e.dylib": b"\xcf\xfa\xed\xfe"}),
                      layer, 10**7, prebuilt=_Prebuilt(()))

    assert not list(layer.rglob("*.*"))
    assert sorted(refused) == [f"the wheel's a{SUFFIX} is not loaded: it is not an ELF file",
                               f"the wheel's b{SUFFIX} is not loaded: it is not a shared object",
                               f"the wheel's c{SUFFIX} is not loaded: it is built for another machine"]


def test_a_native_file_of_the_tree_is_never_staged_and_the_gates_own_only_as_it_was_admitted(tmp_path: Path) -> None:
    """The tree's committed `_speedups.so` is replaced by what the build compiled (copied by the gate, admitted);
    a committed native file beside it, and an admitted one changed since, are left out of the run."""
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / f"_speedups{SUFFIX}").write_bytes(b"committed")
    (tree / "pkg" / "libextra.so.1").write_bytes(b"committed too")
    layer = tmp_path / "layer"
    (layer / "pkg").mkdir(parents=True)
    (layer / "pkg" / f"_speedups{SUFFIX}").write_bytes(b"compiled in the sandbox")
    (layer / "pkg" / f"_other{SUFFIX}").write_bytes(b"compiled too")

    copied = overlay(layer, tree, ["tests"])
    (tree / "pkg" / f"_other{SUFFIX}").write_bytes(b"changed after it was admitted")
    base = tmp_path / "base"
    base.mkdir()
    staged = stage.make_stage(base, RunRequest(script="x.py", tree=tree), None)

    assert sorted(path.as_posix() for path in copied) == [f"pkg/_other{SUFFIX}", f"pkg/_speedups{SUFFIX}"]
    assert sorted(p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()) == [
        "pkg/__init__.py", f"pkg/_speedups{SUFFIX}"]
    assert (staged / "pkg" / f"_speedups{SUFFIX}").read_bytes() == b"compiled in the sandbox"


def test_a_build_never_sees_an_object_file_or_static_library_to_link_in() -> None:
    assert _objects("x", ["fast.o", "libfast.a", "fast.OBJ", "fast.lib", "fast.c", "setup.py"]) == {
        "fast.o", "libfast.a", "fast.OBJ", "fast.lib"}
