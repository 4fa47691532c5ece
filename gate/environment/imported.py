"""The project's extras its tests import, beyond the test dependencies `gate init` chose (gate/environment/testdeps.py).

A project whose tests import what only its extras bring (cattrs' tests of its converters import msgspec, yaml,
ujson...: its CI installs every extra) would stop every PR with the test dependency group alone: the base's suite
does not collect. So `gate init` reads the test files and conftests (`import` statements, anywhere in them but in a
`try` that goes on without them, read with `ast`) and adds each extra that brings a module they import that
nothing else installs: not the standard library, not the project's own, not a requirement of the project or of
what was chosen. An extra brings a module when it is named as the module is (cattrs' `msgspec`) or one of its
requirements is, by the distribution's name or, for those whose modules have other names, `MODULES`; of several,
the one with the fewest requirements.
"""

from __future__ import annotations

import ast
import contextlib
import re
import sys
from collections.abc import Collection, Mapping, Sequence

from gate.environment.declarations import group_requirements
from gate.environment.testdeps import (
    Choice,
    Reader,
    canonical,
    cfg_list,
    get,
    requirement_lines,
    setup_cfg_extras,
    setup_cfg_option,
    setup_py_literal,
    toml_doc,
)
from gate.errors import BadInput
from gate.syntax import parse_python

# Distributions whose top-level modules are named otherwise, by their PEP 503 names.
MODULES: Mapping[str, tuple[str, ...]] = {
    "pyyaml": ("yaml",), "pymongo": ("bson", "pymongo", "gridfs"), "python-dateutil": ("dateutil",),
    "beautifulsoup4": ("bs4",), "pillow": ("PIL",), "scikit-learn": ("sklearn",), "attrs": ("attr", "attrs"),
    "pyzmq": ("zmq",), "pycryptodome": ("Crypto",), "opencv-python": ("cv2",), "protobuf": ("google",),
    "msgpack-python": ("msgpack",), "pyjwt": ("jwt",), "pyserial": ("serial",), "ruamel-yaml": ("ruamel",),
    "python-multipart": ("multipart",), "typing-extensions": ("typing_extensions",), "setuptools": (
        "setuptools", "pkg_resources"), "pygments": ("pygments",), "python-json-logger": ("pythonjsonlogger",)}
_TEST_CHARS = 512 * 1024  # a longer test file is not read (a change's own files are read here)


def needed_extras(read: Reader, chosen: Choice, extras: Mapping[str, Sequence[str]], test_files: Sequence[str],
                  own: Collection[str]) -> tuple[tuple[str, str], ...]:
    """(extra, why) for each extra of `extras` (name -> requirements) not in `chosen` that brings a module the
    `test_files` import and nothing else installs; `own` are the project's own top-level names."""
    provided = [*project_requirements(read), *(line for extra in chosen.extras for line in extras.get(extra, ()))]
    provided += [line for path in chosen.requirements for line in requirement_lines(read(path) or "")]
    with contextlib.suppress(BadInput):  # (a group that does not resolve: the policy's check says so)
        provided += group_requirements(read, chosen.groups)
    installed = {module.lower() for line in provided for module in modules(line)}
    found: dict[str, str] = {}
    for module, where in test_imports(read, test_files).items():
        if module in own or module in sys.stdlib_module_names or module.lower() in installed:
            continue
        bringing = sorted((len(requirements), extra) for extra, requirements in extras.items()
                          if extra not in chosen.extras and module.lower() in _brought(extra, requirements))
        if bringing:
            found.setdefault(bringing[0][1], f"{where} imports {module}")
    return tuple(found.items())


def _brought(extra: str, requirements: Sequence[str]) -> set[str]:
    """The modules an extra brings, lower-cased: its own name's, and its requirements'."""
    return {canonical(extra).replace("-", "_"), *(module.lower() for line in requirements for module in modules(line))}


def modules(requirement: str) -> tuple[str, ...]:
    """The top-level modules the distribution a requirement names most likely installs."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if name is None:
        return ()
    distribution = canonical(name.group(1))
    return MODULES.get(distribution, (distribution.replace("-", "_"),))


def test_imports(read: Reader, paths: Sequence[str]) -> dict[str, str]:
    """The top-level modules the files at `paths` import (absolute imports, anywhere in them but where a failed
    import is caught), each with the first file that does."""
    found: dict[str, str] = {}
    for path in paths:
        text = read(path)
        if text is None or len(text) > _TEST_CHARS:
            continue
        try:
            tree = parse_python(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        guarded = [inner for node in ast.walk(tree) if isinstance(node, ast.Try) and _optional(node)
                   for statement in node.body for inner in ast.walk(statement)]
        # (a module the file can go without anywhere, it goes without everywhere: structlog's test_twisted.py skips
        # itself when its guarded import fails, and its tests import twisted again)
        optional = {name.split(".")[0] for node in guarded for name in _imported(node)}
        for node in ast.walk(tree):
            for name in _imported(node):
                if name.split(".")[0] not in optional:
                    found.setdefault(name.split(".")[0], path)
    return found


def _imported(node: ast.AST) -> list[str]:
    """The absolute module names an import statement names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []


def _optional(node: ast.Try) -> bool:
    """Whether a `try` goes on without what its body imports (`except ImportError: idna = None`): the tests then
    skip what needs it, as rfc3986's do."""
    caught = [handler.type for handler in node.handlers]
    names = {ast.unparse(each) for kind in caught if kind is not None
             for each in (kind.elts if isinstance(kind, ast.Tuple) else [kind])}
    return None in caught or bool(names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def extra_requirements(read: Reader, doc: Mapping[str, object]) -> dict[str, list[str]]:
    """The project's extras with their requirements: pyproject.toml's (`doc`) `[project.optional-dependencies]`
    or Poetry's `extras`, setup.cfg's (setuptools' or pbr's: `setup_cfg_extras`), setup.py's literal
    `extras_require`."""
    found: dict[str, list[str]] = {}
    project, tool = doc.get("project"), doc.get("tool")
    poetry = tool.get("poetry") if isinstance(tool, dict) else None
    for table in (project.get("optional-dependencies") if isinstance(project, dict) else None,
                  poetry.get("extras") if isinstance(poetry, dict) else None,
                  setup_cfg_extras(read("setup.cfg")),
                  setup_py_literal(read("setup.py"), "extras_require")):
        if isinstance(table, dict):
            for name, value in table.items():
                lines = cfg_list(value) if isinstance(value, str) else value
                if isinstance(name, str) and isinstance(lines, list | tuple):
                    found.setdefault(name, []).extend(str(line) for line in lines if isinstance(line, str))
    return found


def project_requirements(read: Reader) -> list[str]:
    """The project's own requirements as its build files declare them (what installing it brings)."""
    doc = toml_doc(read("pyproject.toml"))
    listed = get(doc, "project", "dependencies")
    found = [str(line) for line in listed if isinstance(line, str)] if isinstance(listed, list) else []
    poetry = get(doc, "tool", "poetry", "dependencies")
    found += [str(name) for name in poetry] if isinstance(poetry, dict) else []
    found += cfg_list(setup_cfg_option(read("setup.cfg"), "install_requires"))
    literal = setup_py_literal(read("setup.py"), "install_requires")
    found += [str(line) for line in literal if isinstance(line, str)] if isinstance(literal, list | tuple) else []
    return found
