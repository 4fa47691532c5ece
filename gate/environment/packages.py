"""Where a tree keeps its own packages: the `package_dir` mapping its build declares, read without running it.

setuptools' `package_dir` (setup.py's literal `package_dir=`, read with `ast`; setup.cfg's `[options]
package_dir`; pyproject.toml's `[tool.setuptools] package-dir`), and the same mapping as other backends write it
(Poetry's `packages = [{include = "pkg", from = "lib"}]`, Hatch's wheel `packages = ["lib/pkg"]` and `sources`,
PDM's `package-dir`, maturin's `python-source`): a package name ("" for the top) to the tree's folder that holds
it. From it come the tree's import roots (`lib` for `{"": "lib"}` or `{"pkg": "lib/pkg"}`: the runs import the
tree's package, not the wheel's copy) and, for each file of a wheel, the tree's file it was built from
(gate/environment/project.py). A folder that leaves the tree (absolute, `..`) is not a mapping. A file longer
than METADATA_CHARS is read as absent: a change's own files are read here, and parsing a long one would cost
the gate's process seconds and hundreds of megabytes (26 MB of TOML: 7 s, 270 MB).
"""

from __future__ import annotations

import configparser
from collections.abc import Mapping
from pathlib import PurePosixPath

from gate.environment.testdeps import Reader, get, setup_py_literal, toml_doc

# The longest pyproject.toml or setup.cfg read (the largest known: 100 kB; setup.py: testdeps.SETUP_PY_CHARS).
METADATA_CHARS = 1024 * 1024


def package_dirs(read: Reader) -> dict[str, str]:
    """The tree's mapping of package names ("" for the top, dotted for a subpackage) to its folders (relative,
    "" for the tree's top), as its build declares it; {} for a flat or src layout that declares none."""
    read = _short(read)
    found: dict[str, str] = {}
    doc = toml_doc(read("pyproject.toml"))
    tool = doc.get("tool", {}) if isinstance(doc.get("tool"), dict) else {}
    found |= _poetry(tool.get("poetry")) | _hatch(tool.get("hatch")) | _single("", get(tool, "pdm", "build",
                                                                                          "package-dir"))
    found |= _single("", get(tool, "maturin", "python-source"))
    found |= _mapping(get(tool, "setuptools", "package-dir"))
    found |= _mapping(_setup_cfg(read("setup.cfg")))
    found |= _mapping(setup_py_literal(read("setup.py"), "package_dir"))
    return found


def _short(read: Reader) -> Reader:
    """`read`, with a file longer than METADATA_CHARS read as absent."""
    def shorter(path: str) -> str | None:
        text = read(path)
        return text if text is None or len(text) <= METADATA_CHARS else None
    return shorter


def import_roots(mapping: Mapping[str, str]) -> tuple[str, ...]:
    """The folders of the tree that must be on the import path for its top-level packages to be the tree's
    own: the top's folder (`lib` for `{"": "lib"}`) and the folder above a top-level package's when it has the
    package's name (`lib` for `{"pkg": "lib/pkg"}`); a package under another name (`{"pkg": "source"}`) has
    none (its wheel's copy is the tree's files: gate/environment/project.py)."""
    found = []
    for name, folder in mapping.items():
        path = PurePosixPath(folder)
        if not name:
            found.append(folder)
        elif "." not in name and path.name == name:
            found.append(str(path.parent) if str(path.parent) != "." else "")
    return tuple(root for root in dict.fromkeys(found) if root)


def tree_path(parts: tuple[str, ...], mapping: Mapping[str, str]) -> str:
    """The tree's path of a wheel's file `parts` (`("pkg", "sub", "x.py")`), as setuptools places a package:
    under the folder of its nearest mapped package (itself, a parent, or the top), the rest of its name as
    folders."""
    packages = parts[:-1]
    for index in range(len(packages), -1, -1):
        name = ".".join(packages[:index])
        if name in mapping:
            return PurePosixPath(mapping[name], *packages[index:], parts[-1]).as_posix()
    return PurePosixPath(*parts).as_posix()


def renamed(mapping: Mapping[str, str]) -> dict[str, str]:
    """The top-level packages the tree keeps in a folder of another name (`{"pkg": "source"}`), which no
    import root can make importable under their own name: name -> folder."""
    return {name: folder for name, folder in mapping.items()
            if name and "." not in name and PurePosixPath(folder).name != name}


def _inside(folder: object) -> str | None:
    """`folder` as a relative folder of the tree ("" for its top), or None when it is none."""
    if not isinstance(folder, str):
        return None
    path = PurePosixPath(folder.strip().replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts:
        return None
    return "" if str(path) == "." else str(path)


def _mapping(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    found = {}
    for name, folder in value.items():
        inside = _inside(folder)
        if isinstance(name, str) and inside is not None and (name or inside):
            found[name.strip()] = inside
    return found


def _single(name: str, folder: object) -> dict[str, str]:
    inside = _inside(folder)
    return {name: inside} if inside else {}


def _setup_cfg(text: str | None) -> dict[str, str] | None:
    """setup.cfg's `[options] package_dir`: lines `name = folder`, `= folder` for the top (or one such line
    after the `=`), as setuptools reads them."""
    if text is None:
        return None
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    value = parser.get("options", "package_dir", fallback="")
    found = {}
    for line in value.splitlines():
        if "=" in line:
            name, _, folder = line.partition("=")
            found[name.strip()] = folder.strip()
        elif line.strip():
            found[""] = line.strip()
    return found


def _poetry(poetry: object) -> dict[str, str]:
    """Poetry's `packages = [{include = "pkg", from = "lib"}]`."""
    found = {}
    entries = poetry.get("packages") if isinstance(poetry, dict) else None
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict) or not isinstance(entry.get("include"), str):
            continue
        include, origin = entry["include"], _inside(entry.get("from", ""))
        if origin and not any(char in include for char in "*?[") and include.isidentifier():
            found[include] = PurePosixPath(origin, include).as_posix()
    return found


def _hatch(hatch: object) -> dict[str, str]:
    """Hatch's wheel target: `packages = ["lib/pkg"]` (the package at the wheel's top) and `sources`
    (`["lib"]`, or `{"lib" = ""}`: the prefix a wheel's path loses)."""
    wheel = get(hatch, "build", "targets", "wheel")
    found = {}
    for table in (get(hatch, "build"), wheel):
        packages = table.get("packages") if isinstance(table, dict) else None
        for package in packages if isinstance(packages, list) else ():
            inside = _inside(package)
            if inside and "/" in inside and PurePosixPath(inside).name.isidentifier():
                found[PurePosixPath(inside).name] = inside
        sources = table.get("sources") if isinstance(table, dict) else None
        if isinstance(sources, list) and len(sources) == 1:
            found |= _single("", sources[0])
        elif isinstance(sources, dict):
            for prefix, target in sources.items():
                if target in ("", "."):
                    found |= _single("", prefix)
    return found
