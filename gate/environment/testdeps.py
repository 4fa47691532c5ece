"""Where a project declares the dependencies its tests need, read as its CI installs them, statically.

A tox test environment (`tox.ini`, `[tool.tox] legacy_tox_ini`, `tox.toml`: `deps =` with its `-r` files and
inline requirements, `extras =`), a Hatch test environment (`[tool.hatch.envs.NAME]` or hatch.toml:
`dependencies`, `extra-dependencies`, `features`, through its `template`), a test extra (pyproject.toml,
Poetry, setup.cfg, or `extras_require` in setup.py read with `ast`: setup.py never runs), a test dependency
group (PEP 735, Poetry, PDM's `[tool.pdm.dev-dependencies]`), a test requirements file, or setuptools'
`tests_require` (setup.py or setup.cfg), before the dev ones (`dev` groups and extras, `requirements-dev.txt`:
linters and docs tools too). `gate init` writes the first it finds (`choose`); the inline requirements of a tox
or Hatch environment, and `tests_require`, are the dependency groups `tox:NAME`, `hatch:NAME` and
`setuptools:tests_require` (`tool_env`), which `environment.groups` installs.
"""

from __future__ import annotations

import ast
import configparser
import itertools
import re
import shlex
import sys
import tomllib
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from gate.syntax import parse_python

Reader = Callable[[str], str | None]
# The longest setup.py read with `ast` (a change's own is read too): its tree takes at most a few hundred bytes a
# character (128 MiB at worst); the largest known setup.py is under 100 kB.
SETUP_PY_CHARS = 256 * 1024

TEST_NAMES = ("test", "tests", "testing")
DEV_NAMES = ("dev",)
TEST_FILES = ("requirements-test.txt", "requirements-tests.txt", "requirements-testing.txt",
              "test-requirements.txt", "tests-requirements.txt", "requirements_test.txt", "requirements/test.txt",
              "requirements/tests.txt", "requirements/testing.txt", "requirements/test.in", "requirements/tests.in",
              # beside the tests themselves (packaging's nox session installs `-r tests/requirements.txt`)
              "tests/requirements.txt", "test/requirements.txt")
DEV_FILES = ("requirements-dev.txt", "dev-requirements.txt", "requirements_dev.txt", "requirements/dev.txt",
             "requirements/development.txt")
# Tool environments a group name can name: `tox:py`, `hatch:test`, `setuptools:tests_require`.
TOOLS = ("tox", "hatch", "setuptools")
# The one setuptools "environment": the requirements `python setup.py test` installed.
TESTS_REQUIRE = "tests_require"
_PYTEST = re.compile(r"\b(?:py\.test|pytest)\b")


class ToolEnv(msgspec.Struct, frozen=True):
    """A tox or Hatch environment that runs the tests, as the tool installs it, or setuptools' `tests_require`."""

    tool: str  # "tox", "hatch" or "setuptools"
    name: str
    where: str  # "tox.ini [testenv]"
    extras: tuple[str, ...] = ()  # the project's extras it installs
    requirements: tuple[str, ...] = ()  # requirements files (`-r`)
    packages: tuple[str, ...] = ()  # inline requirements
    groups: tuple[str, ...] = ()  # the project's dependency groups it installs (tox's `dependency_groups`)
    pytest: tuple[str, ...] = ()  # the arguments its one command that runs pytest passes pytest (tox, Hatch)

    @property
    def group(self) -> str:
        """Its name as `environment.groups` names it."""
        return f"{self.tool}:{self.name}"


def tool_env(group: str, read: Reader) -> ToolEnv | None:
    """The tox or Hatch environment a group `tox:NAME` / `hatch:NAME` names, or setuptools' `tests_require`
    (`setuptools:tests_require`); None when the base has none."""
    tool, _, name = group.partition(":")
    if tool == "tox":
        return tox_env(read, name)
    if tool == "hatch":
        return hatch_env(read, name)
    if tool == "setuptools" and name == TESTS_REQUIRE:
        return tests_require(read)
    return None


def is_tool_group(group: str) -> bool:
    return group.partition(":")[0] in TOOLS and ":" in group


# ----- tox -----------------------------------------------------------------------------------------------

def tox_env(read: Reader, name: str | None = None) -> ToolEnv | None:
    """The tox environment `name`, or (None) the one that runs the tests, as `tox -e py` does on this Python
    in CI: the first whose commands, as its factors select them, run pytest of `test`, `tests`, the envlist's
    CPython ones for this Python (`py311`, `py311-cov`, then `py3`), `py` (the plain `[testenv]`), then the
    envlist's other CPython ones, the newest first (`py27` lists deps that no longer install; `pypy3` is another
    interpreter). A `py` whose every command is for other factors (munch's `{py27,py36}-full: pytest`) runs no
    test: the envlist's `py36-full` does."""
    config = _tox_config(read)
    if config is None:
        return None
    where, sections, envlist = config
    if name is not None:
        return _tox_resolve(where, sections, name) if name == "testenv" or f"testenv:{name}" in sections \
            or "testenv" in sections else None
    pythons = [e for e in envlist if re.fullmatch(r"py[\d.]*", e.split("-")[0])]
    here = [e for version in (f"{sys.version_info[0]}{sys.version_info[1]}", f"{sys.version_info[0]}"
                              f".{sys.version_info[1]}", str(sys.version_info[0]))
            for e in pythons if e.split("-")[0] == f"py{version}"]
    named = [*TEST_NAMES, *here, "py", *sorted(pythons, key=_python_of, reverse=True)]
    for candidate in dict.fromkeys(named):
        if f"testenv:{candidate}" not in sections and candidate not in ("py", *envlist):
            continue
        if any(_PYTEST.search(command) for command in _tox_env_commands(sections, candidate)):
            return _tox_resolve(where, sections, candidate)
    return None


def _python_of(env: str) -> tuple[int, ...]:
    """The Python of a CPython tox environment: (3, 11) of `py311`, `py3.11` or `py311-cov`, (3,) of `py3`."""
    digits = env.split("-")[0][2:].replace(".", "")
    return (int(digits[0]), int(digits[1:])) if len(digits) > 1 else (int(digits),) if digits else ()


def _tox_config(read: Reader) -> tuple[str, dict[str, dict[str, Any]], list[str]] | None:
    """(file, sections as {section: {key: text or list}}, envlist) of the base's tox configuration."""
    text, where = read("tox.ini"), "tox.ini"
    if text is None:
        pyproject = toml_doc(read("pyproject.toml"))
        legacy = get(pyproject, "tool", "tox", "legacy_tox_ini")
        text, where = (legacy, "pyproject.toml [tool.tox] legacy_tox_ini") if isinstance(legacy, str) else (None, "")
    if text is not None:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(text)
        except configparser.Error:
            return None
        sections = {s: dict(parser.items(s)) for s in parser.sections()}
        tox = sections.get("tox", {})
        return where, sections, _tox_envlist(tox.get("env_list", tox.get("envlist", "")))
    doc = toml_doc(read("tox.toml"))
    if not doc:
        return None
    sections = {"testenv": _native_tox(doc.get("env_run_base"))}
    for env, table in (doc.get("env") or {}).items() if isinstance(doc.get("env"), dict) else ():
        sections[f"testenv:{env}"] = _native_tox(table)
    names = doc.get("env_list")
    return "tox.toml", sections, [str(e) for e in names] if isinstance(names, list) else []


def _tox_envlist(text: str) -> list[str]:
    """tox's `envlist`: names apart by commas or white space, each with its factors in braces expanded as tox
    does (`py{38, 39}-django` is `py38-django`, `py39-django`)."""
    names: list[str] = []
    for part in re.split(r"[\s,]+(?![^{]*\})", text):  # not inside braces
        pieces = re.split(r"(\{[^}]*\})", part.strip())
        options = [[o.strip() for o in p[1:-1].split(",")] if p.startswith("{") else [p] for p in pieces]
        names += ["".join(chosen) for chosen in itertools.product(*options)]
    return [name for name in names if name]


def _native_tox(table: Any) -> dict[str, Any]:
    """A tox.toml environment table as the INI form's text values."""
    if not isinstance(table, dict):
        return {}
    found: dict[str, Any] = {}
    for key in ("deps", "extras", "dependency_groups"):
        if isinstance(table.get(key), list):
            found[key] = "\n".join(str(item) for item in table[key])
    commands = table.get("commands")
    if isinstance(commands, list):
        found["commands"] = "\n".join(" ".join(map(_tox_part, c)) if isinstance(c, list) else str(c)
                                      for c in commands)
    return found


def _tox_part(part: Any) -> str:
    """A word of a tox.toml command: `{replace = "posargs", default = ["tests"]}` is its default with no
    arguments given (shell-quoted words)."""
    if isinstance(part, dict) and part.get("replace") == "posargs":
        default = part.get("default")
        return " ".join(shlex.quote(str(word)) for word in default) if isinstance(default, list) else ""
    return str(part)


def _tox_value(sections: dict[str, dict[str, Any]], env: str, key: str) -> str:
    own = sections.get(f"testenv:{env}", {})
    value = own.get(key, sections.get("testenv", {}).get(key, ""))
    return _tox_substitute(str(value), sections)


def _tox_substitute(text: str, sections: dict[str, dict[str, Any]]) -> str:
    """tox's `{[section]key}` references and `{toxinidir}`, as far as a static reading can."""
    text = re.sub(r"\{\[([^\]]+)\]([^}]+)\}", lambda m: str(sections.get(m.group(1), {}).get(m.group(2), "")), text)
    return text.replace("{toxinidir}/", "").replace("{toxinidir}", ".")


def _tox_resolve(where: str, sections: dict[str, dict[str, Any]], env: str) -> ToolEnv:
    factors = set(env.split("-"))
    extras: list[str] = []
    files: list[str] = []
    packages: list[str] = []
    for line in _tox_lines(_tox_value(sections, env, "deps"), factors):
        if re.match(r"^(-r|--requirement)\s*", line):
            files.append(re.sub(r"^(-r|--requirement)\s*=?\s*", "", line))
        elif line.startswith(("-c", "--constraint")):
            continue
        elif re.match(r"^(-e\s*)?\.(\[[^\]]*\])?$", line):  # the project itself, maybe with extras
            extras += [e.strip() for e in re.findall(r"\[([^\]]*)\]", line)[0].split(",")] if "[" in line else []
        else:
            packages.append(line)
    extras += [e for line in _tox_lines(_tox_value(sections, env, "extras"), factors)
               for e in re.split(r"[\s,]+", line) if e]
    groups = [g for line in _tox_lines(_tox_value(sections, env, "dependency_groups"), factors)
              for g in re.split(r"[\s,]+", line) if g]
    selected = _tox_env_commands(sections, env)
    commands = [line for line in selected if "{" not in line]  # (as _tox_lines leaves them)
    for kind, value in _command_installs(commands):
        {"extra": extras, "requirements": files, "group": groups}[kind].append(value)
    section = f"testenv:{env}" if f"testenv:{env}" in sections else "testenv"
    # The arguments of its one pytest command, of those its factors select (natsort's tox runs pytest three times:
    # no one of them is its suite), when a static reading can tell them (no substitution left in braces).
    runs = [line for line in selected if _PYTEST.search(line)]
    run = runs[0] if len(runs) == 1 and "{" not in runs[0] else None
    return ToolEnv("tox", env, f"{where} [{section}]", tuple(dict.fromkeys(extras)), tuple(dict.fromkeys(files)),
                   tuple(dict.fromkeys(packages)), tuple(dict.fromkeys(groups)),
                   _pytest_args(run) if run is not None else ())


def _tox_commands(text: str) -> str:
    """An environment's `commands` as tox runs them with no arguments given: a line continued by a backslash
    joined to the next, `{posargs:DEFAULT}` its default, `{envpython}` the environment's Python."""
    text = re.sub(r"\\\n", " ", text)
    text = re.sub(r"\{posargs(?::([^{}]*))?\}", lambda m: m.group(1) or "", text)
    return re.sub(r"\{envpython\}", "python", re.sub(r"\{envbindir\}/", "", text))


def _pytest_args(line: str) -> tuple[str, ...]:
    """The arguments a command line passes pytest (`python -m pytest -q tests`: `-q`, `tests`)."""
    try:
        words = shlex.split(line)
    except ValueError:
        return ()
    start = next((index for index, word in enumerate(words) if word.rpartition("/")[2] in ("pytest", "py.test")),
                 None)
    return () if start is None else tuple(words[start + 1:])


def _command_installs(commands: list[str]) -> list[tuple[str, str]]:
    """What an environment's commands install besides its `deps`, as (kind, name): the project's extras and
    requirements files of `pip install` and `uv pip install` (`-e .[test]`, `-r FILE`), the groups of `pdm
    install`/`pdm sync` (`-G NAME`), the extras and groups of `uv sync` (`--extra`, `--group`). aiofiles' tox
    runs `pdm install -G test`; zope.interface's `pip install -U -e .[test]`."""
    found: list[tuple[str, str]] = []
    for command in commands:
        try:
            words = [w for w in shlex.split(command) if "{" not in w]  # `{envpython}`, `{posargs}`
        except ValueError:
            continue
        while words and re.match(r"^(-|-m|python[\d.]*|py)$", words[0]):  # `- cmd`, `python -m pip ...`
            words = words[1:]
        pairs = list(itertools.pairwise(words))
        if words[:2] in (["pip", "install"], ["pip3", "install"]) or words[:3] == ["uv", "pip", "install"]:
            found += [("requirements", value) for flag, value in pairs if flag in ("-r", "--requirement")]
            project = [m.group(1) for m in map(re.compile(r"^\./?\[([^\]]*)\]$").match, words) if m]
            found += [("extra", extra.strip()) for listed in project for extra in listed.split(",") if extra.strip()]
        elif words[:1] == ["pdm"] and words[1:2] in (["install"], ["sync"]):
            found += [("group", name) for flag, value in pairs if flag in ("-G", "--group")
                      for name in value.split(",") if name and not name.startswith(":")]
        elif words[:2] == ["uv", "sync"]:
            found += [("extra" if flag == "--extra" else "group", value) for flag, value in pairs
                      if flag in ("--extra", "--group")]
    return found


def _tox_env_commands(sections: dict[str, dict[str, Any]], env: str) -> list[str]:
    """The commands the tox environment `env` runs, as its factors select them (braces left in)."""
    return _tox_selected(_tox_commands(_tox_value(sections, env, "commands")), set(env.split("-")))


def _tox_lines(text: str, factors: set[str]) -> list[str]:
    """The lines of a tox value that apply to an environment of `factors` (`_tox_selected`), less any that still
    holds braces (a substitution such as `{[testenv]deps}` or `{envtmpdir}`, which a static reading cannot
    decide)."""
    return [line for line in _tox_selected(text, factors) if "{" not in line]


def _tox_selected(text: str, factors: set[str]) -> list[str]:
    """The lines of a tox value that apply to an environment of `factors` (`py311,py312: x`, `!cov: y`, and
    `py{310,311}-django: z` with its braces expanded as tox expands them), each without its condition."""
    found = []
    for raw in text.splitlines():
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        condition = re.match(r"^([!\w.,{}-]+):\s+(.*)$", line) or re.match(r"^([!\w.,{}-]+):(?![/\\=])(.+)$", line)
        if condition and not line.startswith(("-r", "-c", "-e", "http", "git+", "file:")):
            if not any(all((f[1:] not in factors) if f.startswith("!") else (f in factors)
                           for f in alternative.split("-"))
                       for alternative in _tox_envlist(condition.group(1))):
                continue
            line = condition.group(2).strip()
        found.append(line)
    return found


# ----- Hatch ---------------------------------------------------------------------------------------------

def hatch_env(read: Reader, name: str | None = None) -> ToolEnv | None:
    """The Hatch environment `name`, or (None) the one that runs the tests: `hatch-test` when configured,
    else the first of `test`, `tests`, `testing`, else `default` when its scripts run pytest."""
    envs, where = _hatch_envs(read)
    if not envs:
        return None
    if name is not None:
        return _hatch_resolve(envs, where, name) if name in envs else None
    if "hatch-test" in envs:
        return _hatch_resolve(envs, where, "hatch-test")
    for candidate in TEST_NAMES:
        if candidate in envs:
            return _hatch_resolve(envs, where, candidate)
    if "default" in envs and _PYTEST.search(str(_hatch_option(envs, "default", "scripts") or "")):
        return _hatch_resolve(envs, where, "default")
    return None


def _hatch_envs(read: Reader) -> tuple[dict[str, Any], str]:
    envs = get(toml_doc(read("hatch.toml")), "envs")
    if isinstance(envs, dict) and envs:
        return envs, "hatch.toml"
    envs = get(toml_doc(read("pyproject.toml")), "tool", "hatch", "envs")
    return (envs, "pyproject.toml") if isinstance(envs, dict) else ({}, "")


def _hatch_template(envs: dict[str, Any], name: str) -> str | None:
    """The environment `name` inherits from: its `template`, else `default` (none when detached)."""
    table = _table(envs, name)
    if table.get("detached") or name == "default":
        return None
    template = table.get("template", "default")
    return str(template) if template != name else None


def _hatch_option(envs: dict[str, Any], name: str, key: str, seen: tuple[str, ...] = ()) -> Any:
    table = _table(envs, name)
    if key in table:
        return table[key]
    parent = _hatch_template(envs, name)
    return _hatch_option(envs, parent, key, (*seen, name)) if parent and parent not in seen else None


def _hatch_resolve(envs: dict[str, Any], where: str, name: str) -> ToolEnv:
    def strings(value: Any) -> list[str]:
        return [str(item) for item in value] if isinstance(value, list) else []

    packages = strings(_hatch_option(envs, name, "dependencies"))
    chain, current = [name], _hatch_template(envs, name)
    while current and current not in chain:
        chain.append(current)
        current = _hatch_template(envs, current)
    for env in reversed(chain):
        packages += strings(_table(envs, env).get("extra-dependencies"))
    features = strings(_hatch_option(envs, name, "features"))
    section = f"[tool.hatch.envs.{name}]" if where == "pyproject.toml" else f"[envs.{name}]"
    return ToolEnv("hatch", name, f"{where} {section}", tuple(features), (), tuple(dict.fromkeys(packages)),
                   pytest=_hatch_pytest(_hatch_option(envs, name, "scripts")))


def _hatch_pytest(scripts: Any) -> tuple[str, ...]:
    """The arguments the environment's one script command that runs pytest passes it as `hatch run SCRIPT`
    runs it with no arguments (`{args:DEFAULT}` its default, `{env:NAME:DEFAULT}` its default); none when no
    command, or more than one, runs pytest."""
    commands = [line for value in (scripts.values() if isinstance(scripts, dict) else ())
                for line in ([value] if isinstance(value, str) else value if isinstance(value, list) else ())
                if isinstance(line, str) and _PYTEST.search(line)]
    runs = list(dict.fromkeys(re.sub(r"\{(?:args|env:[^{}:]*)(?::([^{}]*))?\}", lambda m: m.group(1) or "", line)
                              for line in commands))
    return _pytest_args(runs[0]) if len(runs) == 1 else ()


# ----- setuptools' tests_require -------------------------------------------------------------------------

def tests_require(read: Reader) -> ToolEnv | None:
    """setuptools' `tests_require`, which `python setup.py test` installed before setuptools removed that
    command, and where some projects still keep their only list of test dependencies (pyrsistent): a list or
    string of requirements in setup.py's `setup(...)` call (read with `ast`, never run), else setup.cfg's
    `[options]` (a value setup.py leaves empty is setup.cfg's, as setuptools has it); None when neither holds
    one, or setup.py's is computed (whatever it is, setup.cfg's is not the one setuptools would take)."""
    node = _setup_py_keyword(read("setup.py"), TESTS_REQUIRE, whole=True)
    if node is not None:
        packages = _requirements(_literal(node))
        if packages is None:
            return None
        if packages:
            return ToolEnv("setuptools", TESTS_REQUIRE, f"setup.py {TESTS_REQUIRE}", packages=packages)
    packages = cfg_list(setup_cfg_option(read("setup.cfg"), TESTS_REQUIRE))
    where = f"setup.cfg [options] {TESTS_REQUIRE}"
    return ToolEnv("setuptools", TESTS_REQUIRE, where, packages=packages) if packages else None


def _requirements(value: object) -> tuple[str, ...] | None:
    """The requirements a setup.py value lists as setuptools reads them (a string's lines, nested lists and
    tuples, each without its comment), or None when it holds anything else."""
    if isinstance(value, str):
        return tuple(requirement_lines(value))
    if not isinstance(value, (list, tuple)):
        return None
    found: list[str] = []
    for item in value:
        more = _requirements(item)
        if more is None:
            return None
        found += more
    return tuple(found)


def cfg_list(value: str | None) -> tuple[str, ...]:
    """A setup.cfg list of requirements as setuptools reads it: one a line, or on one line separated by `;`,
    each without its comment."""
    if not value:
        return ()
    chunks = value.splitlines() if "\n" in value else value.split(";")
    return tuple(requirement_lines("\n".join(chunks)))


# The sections of setup.cfg that declare extras: setuptools' and pbr's (munch's `[extras]`).
SETUP_CFG_EXTRAS = ("options.extras_require", "extras")


def setup_cfg_extras(text: str | None) -> dict[str, str]:
    """The extras setup.cfg declares, each with its requirements as written (`cfg_list` reads them), in
    setuptools' `[options.extras_require]` or pbr's `[extras]`; none when it does not read."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text or "")
    except configparser.Error:
        return {}
    return {name: value for section in SETUP_CFG_EXTRAS if parser.has_section(section)
            for name, value in parser.items(section)}


def setup_cfg_option(text: str | None, key: str) -> str | None:
    """An `[options]` value of setup.cfg as setuptools reads it (`%%` is `%`), or None (also when it does not
    read)."""
    parser = configparser.ConfigParser()
    try:
        parser.read_string(text or "")
        return parser.get("options", key, fallback=None)
    except configparser.Error:
        return None


# ----- extras, the project's name, a line naming it ------------------------------------------------------

def setup_py_extras(text: str | None) -> list[str]:
    """The names of the extras in `extras_require` of setup.py's `setup(...)` call, read with `ast` (a dict
    written in the call, or a name bound to one at the module's top; its values may be computed, as
    zope.interface's `'test': tests_require`); [] when the dict itself is computed some other way."""
    node = _setup_py_keyword(text, "extras_require")
    if not isinstance(node, ast.Dict):
        return []
    return [key.value for key in node.keys if isinstance(key, ast.Constant) and isinstance(key.value, str)]


def setup_py_literal(text: str | None, keyword: str) -> object:
    """The value of `keyword` in setup.py's `setup(...)` call when it is a literal (written in the call, or a
    name bound to one once at the module's top and changed nowhere: `TESTS += [...]` or `TESTS.append(...)`
    would make it another), read with `ast`; None otherwise (or when setup.py is longer than SETUP_PY_CHARS).
    setup.py never runs."""
    node = _setup_py_keyword(text, keyword, whole=True)
    return _literal(node) if node is not None else None


def _literal(node: ast.expr) -> object:
    """The value of a literal expression, or None when it is not one."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _setup_py_keyword(text: str | None, keyword: str, whole: bool = False) -> ast.expr | None:
    """The expression of `keyword` in setup.py's `setup(...)` call (a name bound at the module's top read
    through; with `whole`, only one the module binds once and changes nowhere), or None."""
    if not text or len(text) > SETUP_PY_CHARS:
        return None
    try:
        module = parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    bound = {target.id: node.value for node in module.body if isinstance(node, ast.Assign)
             for target in node.targets if isinstance(target, ast.Name)}
    if whole:
        for name in _changed(module):
            bound.pop(name, None)
    for node in ast.walk(module):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup"):
            continue
        for item in node.keywords:
            if item.arg == keyword:
                return bound.get(item.value.id, item.value) if isinstance(item.value, ast.Name) else item.value
    return None


def _changed(module: ast.Module) -> set[str]:
    """The names a module binds more than once or changes after binding (an augmented assignment, a method
    called on it), anywhere in it."""
    bindings: dict[str, int] = {}
    changed: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bindings[node.id] = bindings.get(node.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            changed.add(node.target.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name):
            changed.add(node.func.value.id)
    return changed | {name for name, count in bindings.items() if count > 1}


# A distribution's name as a project declares it.
_DISTRIBUTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def project_name(read: Reader) -> str | None:
    """The base project's distribution name (pyproject.toml, Poetry, setup.cfg, setup.py's `setup(name=...)`
    or a literal `name=` in it)."""
    doc = toml_doc(read("pyproject.toml"))
    for name in (get(doc, "project", "name"), get(doc, "tool", "poetry", "name")):
        if isinstance(name, str):
            return name
    cfg = read("setup.cfg")
    if cfg is not None:
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(cfg)
            if parser.get("metadata", "name", fallback=""):
                return parser.get("metadata", "name")
        except configparser.Error:
            pass
    setup_py = read("setup.py")
    named = _setup_py_keyword(setup_py, "name")  # (a constant the call names included: PyYAML's `NAME`)
    if isinstance(named, ast.Constant) and isinstance(named.value, str) and _DISTRIBUTION.fullmatch(named.value):
        return named.value
    found = re.search(r"""\bname\s*=\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["']""", setup_py or "")
    return found.group(1) if found else None


def names_project(line: str, name: str | None) -> bool:
    """Whether a requirements line installs the project itself (`-e .`, `.[test]`, `NAME==1.2`): the gate
    installs the base's own tree, and such a line pins another version of it or builds it twice."""
    line = line.split(" #")[0].strip()
    if re.match(r"^(-e\s+|--editable[\s=]+)?(\.|\./|file:\.?/?)(\[[^\]]*\])?(\s|$)", line):
        return True
    if name is None or line.startswith("-"):
        return False
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return canonical(Requirement(line).name) == canonical(name)
    except InvalidRequirement:
        return False


def project_extras(line: str) -> tuple[str, ...]:
    """The extras a requirements line that installs the project itself asks of it (`-e .[socks]`: socks)."""
    found = re.search(r"\[([^\]]*)\]", line.split(" #")[0])
    return tuple(extra.strip() for extra in found.group(1).split(",") if extra.strip()) if found else ()


def requirement_lines(text: str) -> list[str]:
    return [line.split(" #")[0].strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")]


# ----- the choice ----------------------------------------------------------------------------------------

class Choice(msgspec.Struct, frozen=True):
    """What `gate init` installs for the tests, and why."""

    extras: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ()
    why: str = ""  # where it came from, in words
    dev: bool = False  # a dev set (linters and docs tools too): nothing smaller was declared
    others: tuple[str, ...] = ()  # what else is declared and was passed over
    left_out: tuple[str, ...] = ()  # lines naming the project itself in the files chosen
    imported: tuple[tuple[str, str], ...] = ()  # extras added for what the tests import, with why (imported.py)


def choose(read: Reader, extras: Sequence[str], groups: Sequence[str], has_project: bool) -> Choice:
    """The smallest declared set of test dependencies (`extras`, `groups`: what the project declares, by
    name), as the project's CI installs them: a tox or Hatch test environment, a test extra, group or
    requirements file, and only when there is none of those a dev group, extra or file."""
    tox, hatch = tox_env(read), hatch_env(read)
    files = [p for p in TEST_FILES if read(p) is not None]
    dev_files = [p for p in DEV_FILES if read(p) is not None]
    options: list[Choice] = []
    for env in (tox, hatch):
        if env is not None:
            kept = tuple(e for e in env.extras if e in extras and has_project)
            present = tuple(p for p in env.requirements if read(p) is not None)
            named = tuple(g for g in env.groups if g in groups)
            brings = Choice(kept, (*named, *((env.group,) if env.packages else ())), present,
                            f"{env.where}, the environment that runs pytest")
            if brings.extras or brings.groups or brings.requirements:  # else it brings the project alone
                options.append(brings)
    extra = next((e for e in TEST_NAMES if e in extras), None) if has_project else None
    if extra:
        options.append(Choice(extras=(extra,), why=f"the test extra {extra!r}"))
    group = next((g for g in TEST_NAMES if g in groups), None)
    if group:
        options.append(Choice(groups=(group,), why=f"the test dependency group {group!r}"))
    if files:
        options.append(Choice(requirements=(files[0],), why=f"the test requirements file {files[0]}"))
    legacy = tests_require(read) if has_project else None
    if legacy is not None:
        options.append(Choice(groups=(legacy.group,), why=f"{legacy.where}, what `setup.py test` installed"))
    dev_extra = next((e for e in DEV_NAMES if e in extras), None) if has_project else None
    dev_group = next((g for g in DEV_NAMES if g in groups), None)
    if dev_group:
        options.append(Choice(groups=(dev_group,), why=f"the dev dependency group {dev_group!r}", dev=True))
    if dev_extra:
        options.append(Choice(extras=(dev_extra,), why=f"the dev extra {dev_extra!r}", dev=True))
    if dev_files:
        options.append(Choice(requirements=(dev_files[0],), why=f"the dev requirements file {dev_files[0]}",
                              dev=True))
    if not options:
        return Choice()
    chosen, rest = options[0], options[1:]
    name = project_name(read)
    left_out = tuple(f"{path}: {line}" for path in chosen.requirements
                     for line in requirement_lines(read(path) or "") if names_project(line, name))
    others = [o.why for o in rest] + [f"the requirements file {p}" for p in (*files[1:], *dev_files[1:])]
    return Choice(chosen.extras, chosen.groups, chosen.requirements, chosen.why, chosen.dev,
                  tuple(dict.fromkeys(others)), left_out)


def toml_doc(text: str | None) -> dict[str, Any]:
    """The TOML document `text`; {} for none, or for one that does not parse (the build says what is wrong)."""
    try:
        return tomllib.loads(text) if text else {}
    except tomllib.TOMLDecodeError:
        return {}


def _table(doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def get(doc: Any, *keys: str) -> Any:
    """`doc[keys[0]][keys[1]]...`, or None where a level is missing or not a table."""
    for key in keys:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def canonical(name: str) -> str:
    """A distribution's, extra's or group's name as PEP 503 and PEP 735 compare them."""
    return re.sub(r"[-_.]+", "-", name).lower()
