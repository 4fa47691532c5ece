"""The compiler a project's build finds in the sandbox: which host paths a run's root binds read-only so that
the head's own build compiles its extensions there, as `pip install .` does on the runner.

Found as the root's other paths are (gate/sandbox/detect.py): by asking, under the sandbox's interpreter, the
tools themselves, never from a list of one machine's paths. The compilers are those the interpreter's build
configuration names (sysconfig's CC, CXX, LDSHARED: what setuptools runs) and `cc`, `c++` (what other build
systems run), looked up on the gate's PATH (sudo's `secure_path` on a runner) as a CI job's `pip install .`
finds them; each driver tells where its programs are (`-print-prog-name`: cc1, cc1plus, collect2, lto1, as,
ld), its header search list (`-E -v`), its files for a shared object's link (`-print-file-name`: crt files,
the C library's linker scripts, libgcc); the loader tells which shared libraries each program maps
(`LD_TRACE_LOADED_OBJECTS`, as ldd: nothing of the program runs); the interpreter tells where its headers are
(`Python.h`). A compiler runs here, as the gate's user (root), only when no other user could have replaced it
(the file, each link on the way to it and every folder above them): one that could have been is not used. Only
paths any user may read are bound (a home directory is not).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import msgspec

from gate import memo
from gate.sandbox.detect import signature
from gate.sandbox.stage import MINIMAL_PATH

# The files a compiler reads: C, C++ and their headers, and Cython's sources, which its build turns into C.
SOURCES = (".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".pyx", ".pxd", ".pxi")
# Run under the sandbox's interpreter (`-s -S -P`): prints what the module docstring lists, as JSON.
_FIND = r'''
import json, os, shlex, shutil, stat, subprocess, sys, sysconfig
PATH = sys.argv[1]
PROGRAMS = ("cc1", "cc1plus", "collect2", "lto-wrapper", "lto1", "as", "ld")
LINKED = ("crti.o", "crtn.o", "crtbeginS.o", "crtendS.o", "libc.so", "libc_nonshared.a", "libm.so", "libgcc.a",
          "libgcc_s.so", "libstdc++.so")

def trusted(path, depth=0):
    """No user but root could have replaced the file, a link on the way to it, or a folder above either."""
    if depth > 40:
        return False
    current = os.path.abspath(path)
    while True:
        try:
            info = os.lstat(current)
        except OSError:
            return False
        if info.st_uid != 0 or (info.st_mode & 0o022 and not stat.S_ISLNK(info.st_mode)
                                and not (stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX)):
            return False
        if stat.S_ISLNK(info.st_mode) and not trusted(os.path.join(os.path.dirname(current),
                                                                    os.readlink(current)), depth + 1):
            return False
        if current == "/":
            return True
        current = os.path.dirname(current)

def public(path):
    """Any user may read it, through every folder above it."""
    real = os.path.realpath(path)
    try:
        while True:
            mode = os.stat(real).st_mode
            if not mode & stat.S_IROTH or (stat.S_ISDIR(mode) and not mode & stat.S_IXOTH):
                return False
            if real == "/":
                return True
            real = os.path.dirname(real)
    except OSError:
        return False

def ask(*argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={"PATH": PATH, "LANG": "C"},
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout + done.stderr

def libraries(program):
    """The shared libraries the loader maps for `program`, resolved (the program itself does not run)."""
    if not trusted(program):
        return []
    try:
        done = subprocess.run([program], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                              env={"LD_TRACE_LOADED_OBJECTS": "1", "PATH": PATH})
    except (OSError, subprocess.TimeoutExpired):
        return []
    found = []
    for line in done.stdout.splitlines():
        words = line.split()
        path = words[2] if len(words) > 2 and words[1] == "=>" else words[0] if words else ""
        if path.startswith("/"):
            found.append(os.path.realpath(path))
    return found

def script_inputs(path):
    """The files a linker script (libc.so) names."""
    try:
        with open(path, "rb") as file:
            text = file.read(65536)
    except OSError:
        return []
    if b"\0" in text:
        return []
    return [word for word in text.decode("utf-8", "replace").replace("(", " ").replace(")", " ").split()
            if word.startswith("/") and os.path.exists(word)]

config = sysconfig.get_config_vars()
named = [(shlex.split(str(config.get(key) or "")) or [""])[0] for key in ("CC", "CXX", "LDSHARED", "LDCXXSHARED")]
cc = named[0]
compilers, untrusted, versions, paths, asked, folders = {}, [], [], [], set(), []
for name in dict.fromkeys(filter(None, (*named, "cc", "c++"))):
    path = shutil.which(name, path=PATH)
    if path is None:
        continue
    if not trusted(path):
        untrusted.append(path)
        continue
    compilers[name] = path
    paths.append(path)
    folders.append(os.path.dirname(path))
    if os.path.realpath(path) in asked:  # (cc is often gcc under another name: asked once)
        continue
    asked.add(os.path.realpath(path))
    version = ask(path, "-dumpfullversion", "-dumpversion").strip().splitlines()
    versions.append(f"{name} {version[0] if version else '?'} {os.path.realpath(path)}")
    programs = [path]
    for program in PROGRAMS:
        found = ask(path, f"-print-prog-name={program}").strip()
        where = found if os.path.isabs(found) else shutil.which(found, path=PATH) if found else None
        if where and os.path.isfile(where):
            programs.append(where)
            # The driver's own programs (cc1, collect2, lto1) and plugins: their folder, whole; one it runs
            # from the PATH (as, ld): the file, and its folder on the build's PATH.
            paths.append(os.path.dirname(where) if os.path.isabs(found) else where)
            if not os.path.isabs(found):
                folders.append(os.path.dirname(where))
    for line in ask(path, "-print-search-dirs").splitlines():
        if line.startswith("install:"):
            paths.append(line.partition(":")[2].strip())
    for language in ("c", "c++"):
        listing = ask(path, "-E", "-v", "-x", language, os.devnull)
        start, end = "#include <...> search starts here:", "End of search list."
        if start in listing:
            paths += [line.strip() for line in listing.partition(start)[2].partition(end)[0].splitlines()
                      if line.strip()]
    for name in LINKED:
        found = ask(path, f"-print-file-name={name}").strip()
        if os.path.isabs(found) and os.path.exists(found):
            real = os.path.realpath(found)
            paths += [found, os.path.dirname(real), *script_inputs(real)]
    for program in programs:
        paths += [os.path.dirname(library) for library in libraries(program)]
include = sysconfig.get_paths()["include"]
headers = os.path.join(include, "Python.h")
missing = ""
if cc not in compilers:
    missing = (f"{untrusted[0]} can be changed by a user other than root" if untrusted and cc and
               any(os.path.basename(p) == cc for p in untrusted)
               else f"no C compiler ({cc or 'cc'}, which {sys.executable} builds extensions with) on the PATH "
                    f"{PATH}")
elif not os.path.isfile(headers):
    missing = f"{sys.executable}'s headers are not installed ({headers} is missing)"
paths.append(include)
paths = [os.path.normpath(p) for p in dict.fromkeys(paths) if os.path.exists(p) and public(p)]
print(json.dumps({"compilers": compilers, "versions": versions, "paths": paths, "include": include,
                  "missing": missing, "folders": list(dict.fromkeys(folders))}))
'''


class Toolchain(msgspec.Struct, frozen=True):
    """A compiler the sandbox's builds can use, or why there is none."""

    compilers: tuple[tuple[str, str], ...] = ()  # the names a build runs -> their paths
    paths: tuple[str, ...] = ()  # the host paths a run's root binds read-only for them
    folders: tuple[str, ...] = ()  # where the build's PATH finds them and the programs they run (as, ld)
    identity: tuple[str, ...] = ()  # each compiler's name, version and file, and the interpreter's headers
    missing: str = ""  # why a build cannot compile an extension here ("" when it can)

    def describe(self) -> str:
        """Its line in the verdict's facts."""
        if self.missing:
            return f"none: {self.missing}; a project's compiled extensions are not built"
        names = ", ".join(name for name, _ in self.compilers)
        return f"{self.identity[0].rsplit(' ', 1)[0]} ({names}) and {self.identity[-1]}, read-only in the build"


def find(interpreter: str, path: str) -> Toolchain:
    """The toolchain the sandbox's `interpreter` builds extensions with on this machine (the module docstring),
    its compilers looked up on `path` (the gate's PATH, as a CI job's `pip install .` finds them). Remembered as
    root (gate/memo.py) while the interpreter, the folders of `path` and every file and folder found are
    unchanged."""
    path = ":".join(folder for folder in path.split(":") if os.path.isabs(folder)) or MINIMAL_PATH
    key = {"interpreter": [interpreter, signature(interpreter), signature(os.path.realpath(interpreter))],
           "path": [path, *(signature(folder) for folder in path.split(":"))],
           "finder": hashlib.sha256(_FIND.encode()).hexdigest(), "user": os.geteuid()}
    kept = memo.recall("toolchain", key)
    if isinstance(kept, dict) and isinstance(kept.get("found"), dict) and kept.get("signatures") == _signatures(
            kept["found"]):
        found = kept["found"]
    else:
        try:
            done = subprocess.run([interpreter, "-s", "-S", "-P", "-c", _FIND, path], capture_output=True,
                                  text=True, timeout=300, stdin=subprocess.DEVNULL,
                                  env={"PATH": MINIMAL_PATH, "LANG": "C.UTF-8"})
            found = json.loads(done.stdout)
        except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
            return Toolchain(missing=f"could not look for a compiler with {interpreter}: {exc}")
        memo.remember("toolchain", key, {"found": found, "signatures": _signatures(found)})
    return Toolchain(compilers=tuple(found["compilers"].items()), paths=tuple(found["paths"]),
                     folders=tuple(found["folders"]), missing=found["missing"],
                     identity=(*found["versions"], f"the headers in {found['include']}"))


def _signatures(found: dict[str, object]) -> list[list[int] | None]:
    """What changes when a file or folder the finder found is replaced."""
    paths = found.get("paths", [])
    compilers = found.get("compilers", {})
    listed = [*(paths if isinstance(paths, list) else []), *(compilers.values() if isinstance(compilers, dict) else [])]
    return [signature(str(path)) for path in listed]
