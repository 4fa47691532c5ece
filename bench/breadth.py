"""The gate on real projects of many shapes, each with an honest change and a regression, against plain pytest.

    sudo .venv/bin/python bench/breadth.py [--cache DIR] [--only NAME ...] [--json FILE] [--cold]

Each project is fetched by pinned version as its sdist (`pip download --no-deps --no-binary NAME`, kept under
`--cache`, by default `~/.cache/gate-bench/sdists`) and turned into a git repository as its maintainers keep
it: the files its build generates (a hatch-vcs or setuptools-scm version file) and the sdist's own metadata
(`PKG-INFO`, `*.egg-info`, bytecode) left out and git-ignored, a file the sdist omits written as the repository
has it, the base commit tagged with the version (the scm builds read it), and the policy exactly as `gate init`
writes it on that tree (the real command, nothing added or changed). Two heads branch from the base: an honest
change (a comment) that must be accepted with about as many passing tests as plain pytest's, and a regression
that must be blocked, naming a failing test: `return None` as the first statement of a Python function its
tests call, or `Py_RETURN_NONE;` as the first statement of a C function of its extension.

Times, one sample each (the machine's load is printed with the table):
- gate cold: `python -m gate check --base main --head honest --json F` with an empty `GATE_CACHE_DIR` (the
  environment is built, the base's suite runs for the baseline, then the head's); gate warm: the same again;
- pytest cold: what a CI job does on a fresh checkout of the head: an active virtual environment (the gate's run
  interpreter), `pip install -e .` with the same test extra or requirements (plus pytest when they do not
  bring it), then `python -m pytest -q -p no:cacheprovider PATHS`; pytest warm: pytest again.
Both use the machine's pip configuration and its HTTP cache (the first ever run downloads more).

`--cold` times what a job on a hosted runner does, where nothing is cached: side by side on the honest head,
each with a fresh `GATE_CACHE_DIR` and fresh pip and uv caches (`XDG_CACHE_HOME`), the same indexes (the
machine's pip configuration): the plain CI job (a clone, a venv, `pip install -e .` with the test dependencies,
`python -m pytest`), the gate (`gate check`, its environment built by uv), and the gate installed without uv
(its environment built by pip), with the environment's own build time from the gate's log. It prints the
gate's ratio to the CI job per project and the median (of the projects the gate gave a verdict on).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.sandbox.detect import run_interpreter

HONEST = "\n# bench: an honest change (a comment)\n"
HONEST_C = "\n/* bench: an honest change (a comment) */\n"
REGRESSION = "return None  # bench: a regression"
REGRESSION_C = "Py_RETURN_NONE;  /* bench: a regression */"
# How far the gate's count of the honest head's passing tests may be from plain pytest's: a test or two that
# fails on both sides only in the sandbox (one that starts /bin/sh) is said by the verdict, not charged.
PASSED_WITHIN = 2


@dataclass(frozen=True)
class Project:
    name: str
    version: str
    shape: str  # layout, build backend, where its test dependencies and pytest configuration live
    pytest: tuple[str, ...]  # what plain pytest's CI job passes to pytest (its paths; none: its configuration's)
    install: tuple[str, ...]  # what plain pytest's CI job installs, after `-e .` (pip arguments)
    # (file, function or Class.method) the regression breaks: a Python function, or a C function of the
    # project's extension returning a `PyObject *` (a `.c` file).
    target: tuple[str, str]
    generated: tuple[str, ...] = ()  # what the build writes and the real repository git-ignores
    # Files the real repository has and its sdist leaves out (path, text), such as its test requirements.
    repository_files: tuple[tuple[str, str], ...] = ()
    # The project is the test framework (pluggy): no suite can test a change to it, so both heads must go to a
    # human ("HUMAN": blocked for a reason, within the budget), its suite still run.
    framework: bool = False

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


MMH3_HELPER = '''"""Helper functions for tests."""


def u32_to_s32(v: int) -> int:
    """Convert a 32-bit unsigned integer to a signed one."""
    if v & 0x80000000:
        return -0x100000000 + v
    return v
'''

BOLTONS_TEST_REQUIREMENTS = """\
coverage==7.2.7
mypy==1.4.1; python_version < "3.8"
mypy[faster-cache]==1.14.1; python_version >= "3.8" # Last mypy version to run on Python 3.8
pytest==7.4.4; python_version < "3.8"
pytest==8.3.4; python_version >= "3.8"
pytest-cov==4.1.0
tox==4.8.0
"""

MCCABE_TOX = """\
[tox]
envlist =
    ,py36,py37,py38,py39,py310,pypy,pypy3,flake8

[testenv]
deps =
    pytest
    hypothesis ; python_version >= "3.6"
    hypothesmith ; python_version >= "3.6"
commands =
    pytest

[flake8]
max-line-length = 88

[testenv:flake8]
deps =
    flake8
commands =
    flake8

[testenv:docstrings]
deps =
    flake8
    flake8-docstrings
commands =
    flake8

[testenv:release]
deps =
    twine >= 1.4.0
    wheel
commands =
    python setup.py sdist bdist_wheel
    twine upload {posargs:--skip-existing} dist/*
"""

PROJECTS = (
    Project("humanize", "4.11.0", "src, hatch-vcs, [tests] extra (pytest-cov), pyproject", ("tests",),
            ("-e", ".[tests]"), ("src/humanize/number.py", "ordinal"), ("src/humanize/_version.py",)),
    Project("attrs", "24.2.0", "src, hatch-vcs + fancy-readme, [tests] extra, pyproject", ("tests",),
            ("-e", ".[tests]"), ("src/attr/_funcs.py", "asdict")),
    Project("idna", "3.10", "flat, flit, no test deps, no pytest config", ("tests",), ("-e", ".", "pytest"),
            ("idna/core.py", "valid_label_length")),
    Project("packaging", "24.1", "src, flit, tests/requirements.txt", ("tests",),
            ("-e", ".", "-r", "tests/requirements.txt"), ("src/packaging/utils.py", "canonicalize_name")),
    # Its CI's `make requirements` installs its dev set (linters, docs tools, coverage), then the project.
    Project("more-itertools", "10.5.0", "flat, flit, unittest-style, dev requirements", ("tests",),
            ("-r", "requirements/development.txt", "-e", ".", "pytest"), ("more_itertools/more.py", "chunked")),
    Project("six", "1.16.0", "one module, setuptools, setup.cfg [tool:pytest]", ("test_six.py",),
            ("-e", ".", "pytest"), ("six.py", "add_metaclass")),
    Project("wcwidth", "0.2.13", "flat, setuptools, requirements-tests39.txt, tox.ini (--cov)", ("tests",),
            ("-e", ".", "-r", "requirements-tests39.txt"), ("wcwidth/wcwidth.py", "wcswidth")),
    Project("toolz", "1.0.0", "flat, setuptools + versioneer, tests in the package", ("toolz/tests",),
            ("-e", ".", "pytest"), ("toolz/itertoolz.py", "frequencies")),
    Project("boltons", "24.0.0", "flat, setuptools, pytest.ini, requirements-test.txt (pytest 8)", ("tests",),
            ("-e", ".", "-r", "requirements-test.txt"), ("boltons/strutils.py", "strip_ansi"),
            # Its tox.ini installs it, its sdist omits it; as in mahmoud/boltons (its conftest needs pytest < 9).
            repository_files=(("requirements-test.txt", BOLTONS_TEST_REQUIREMENTS),)),
    Project("cachetools", "5.5.0", "src, setuptools (setup.cfg), tox.ini", ("tests",), ("-e", ".", "pytest"),
            ("src/cachetools/keys.py", "hashkey")),
    Project("tabulate", "0.9.0", "flat, setuptools-scm, test/", ("test",), ("-e", ".", "pytest"),
            ("tabulate/__init__.py", "_isint"), ("tabulate/version.py",)),
    Project("isodate", "0.7.2", "src, setuptools-scm, pyproject", ("tests",), ("-e", ".", "pytest"),
            ("src/isodate/isodates.py", "parse_date"), ("src/isodate/version.py",)),
    Project("python-dateutil", "2.9.0.post0", "src, setuptools-scm, requirements-dev.txt, setup.cfg",
            ("tests",), ("-e", ".", "-r", "requirements-dev.txt"), ("src/dateutil/easter.py", "easter"),
            ("src/dateutil/_version.py",)),
    Project("pluggy", "1.5.0", "src, setuptools-scm, [testing] extra, tox.ini, testing/", ("testing",),
            ("-e", ".[testing]"), ("src/pluggy/_manager.py", "PluginManager.is_registered"),
            ("src/pluggy/_version.py",), framework=True),
    # Its CI's `poetry install` installs every dev-dependency (Poetry's carets as pip reads them).
    Project("tomlkit", "0.13.2", "flat, poetry-core, poetry dev-dependencies", ("tests",),
            ("-e", ".", "pytest>=7.2.0,<8", "pytest-cov>=4.0.0,<5", "PyYAML>=6.0,<7", "pre-commit>=2.20.0,<3",
             "mypy>=0.990,<0.991", "Sphinx>=4.3.2,<5", "furo>=2022.9.29,<2023"), ("tomlkit/api.py", "dumps")),
    # Shapes the first fifteen lack. Tests inside the package, and an optional C extension (`_speedups`, with a
    # pure-Python fallback): the regression is in the C code, which only a built extension runs.
    Project("simplejson", "3.19.3", "flat, setup.py, tests in the package, optional C ext", ("simplejson/tests",),
            ("-e", ".", "pytest"), ("simplejson/_speedups.c", "py_encode_basestring_ascii")),
    # Tests inside the package; nox installs no declared test set; test_cli starts `sys.executable -m jsonschema`.
    Project("jsonschema", "4.23.0", "flat, hatch-vcs, tests in the package, nox, sys.executable",
            ("jsonschema/tests",), ("-e", ".", "pytest"), ("jsonschema/_utils.py", "equal")),
    # C only: no module of it is Python.
    Project("ujson", "5.10.0", "C extension only, setuptools-scm, tests/", ("tests",), ("-e", ".", "pytest"),
            ("python/objToJSON.c", "objToJSON"), ("python/version.h",)),
    # An optional C `_speedups` that its conftest tests beside the pure `_native`; tox installs
    # requirements/tests.txt.
    Project("markupsafe", "3.0.2", "src, setuptools, optional C ext, tox -r requirements/tests.txt", ("tests",),
            ("-e", ".", "-r", "requirements/tests.txt"), ("src/markupsafe/_speedups.c", "escape_unicode")),
    # `ZoneInfo("America/Chicago")` when tests/base.py is imported; parametrize ids from `datetime.now()`.
    Project("marshmallow", "3.23.1", "src, flit, [tests] extra, time zones, ids from the clock", ("tests",),
            ("-e", ".[tests]"), ("src/marshmallow/utils.py", "is_collection")),
    # pytest-asyncio in `asyncio_mode = auto`, from PDM's dev-dependencies (tox.ini runs `pdm install -G test`).
    Project("aiofiles", "24.1.0", "src, hatchling, PDM dev group, pytest-asyncio (auto), tox runs pdm",
            ("tests",), ("-e", ".", "pytest>=8.2.2", "pytest-asyncio>=0.23.7", "coverage>=6.4.4", "tox>=3.25.1"),
            ("src/aiofiles/threadpool/__init__.py", "open")),
    # `package_dir={"": "lib"}`; an in-tree PEP 517 backend (`backend-path`); an optional Cython extension
    # that needs libyaml; tests are a conftest's own items over data files.
    Project("PyYAML", "6.0.2", "lib/ package_dir, in-tree backend, optional Cython ext, conftest items",
            ("tests",), ("-e", ".", "pytest"), ("lib/yaml/__init__.py", "dump")),
    # The test module at the repository's root, beside the module; tox installs pytest and Hypothesmith (its
    # tox.ini, which the sdist omits, as PyCQA/mccabe has it at the tag 0.7.0).
    Project("mccabe", "0.7.0", "one module, test module at the root, tox deps", (),
            ("-e", ".", "pytest", "hypothesis", "hypothesmith"),
            ("mccabe.py", "PathGraph.complexity"), repository_files=(("tox.ini", MCCABE_TOX),)),
    # A pkg_resources namespace (`zope`) with the tests inside the package, an optional C extension, tox's
    # `extras = test` and `extras_require` by name in setup.py.
    Project("zope.interface", "7.2", "src namespace pkg, tests in the package, optional C ext, tox extras",
            ("src",), ("-e", ".[test]", "pytest"), ("src/zope/interface/verify.py", "verifyObject")),
    # Tests that run programs by name through the shell: a pager of `cat`, an editor of `sed`.
    Project("click", "8.1.7", "src, setuptools (setup.cfg), requirements/tests.txt, tests run cat and sed",
            ("tests",), ("-e", ".", "-r", "requirements/tests.txt"), ("src/click/utils.py", "make_default_short_help")),
    # Hatch's test environment (`features = ["test"]`, a uv installer, a matrix); its tests use pytest-mock.
    Project("platformdirs", "4.3.6", "src, hatch-vcs, Hatch test env", ("tests",), ("-e", ".[test]"),
            ("src/platformdirs/unix.py", "Unix.user_data_dir"), ("src/platformdirs/version.py",)),
    # Three first met in a later round, as a new maintainer meets them (nothing here tuned for them).
    Project("jmespath", "1.0.1", "flat, setup.py and setup.cfg, no test deps declared", ("tests",),
            ("-e", ".", "pytest"), ("jmespath/lexer.py", "Lexer.tokenize")),
    Project("sqlparse", "0.5.1", "flat, hatchling, Hatch default env", ("tests",), ("-e", ".", "pytest"),
            ("sqlparse/__init__.py", "format")),
    # Its only test dependencies are setup.py's `tests_require` (pytest < 7), and its vector is a C extension.
    Project("pyrsistent", "0.20.0", "flat, setup.py tests_require (pytest<7), optional C ext, *_test.py",
            ("tests",), ("-e", ".", "pytest<7", "hypothesis<7"), ("pvectorcmodule.c", "PVector_append")),
    # Cython's C output in the sdist, a pure-Python fallback beside it; its timestamps are Python for both.
    Project("msgpack", "1.1.0", "flat, setuptools, Cython's C in the sdist, test/", ("test",),
            ("-e", ".", "pytest"), ("msgpack/ext.py", "Timestamp.to_bytes")),
    # pytest.ini loads pytest-cov (`--cov`), writes `--junitxml` into the tree and collects doctests; a C
    # extension with a pure-Python twin; requirements/ci.txt installs the project and requirements/pytest.txt.
    Project("multidict", "6.1.0", "flat, setuptools, C ext, pytest.ini (--cov, --junitxml, doctests)", ("tests",),
            ("-e", ".", "-r", "requirements/pytest.txt"), ("multidict/_multidict.c", "multidict_getall")),
    # A C extension and no fallback; unittest tests inside the package.
    Project("bitarray", "3.0.0", "C ext only, setuptools, unittest tests inside the package", ("bitarray",),
            ("-e", ".", "pytest"), ("bitarray/_bitarray.c", "bitarray_count")),
    # tox installs matplotlib and the `diagrams` extra.
    Project("pyparsing", "3.2.0", "flit, tests/ a package, tox.ini (matplotlib, extras)", ("tests",),
            ("-e", ".[diagrams]", "pytest", "matplotlib"), ("pyparsing/util.py", "col")),
    Project("itsdangerous", "2.2.0", "src, flit, pip-compiled requirements/tests.txt", ("tests",),
            ("-e", ".", "-r", "requirements/tests.txt"), ("src/itsdangerous/encoding.py", "base64_encode")),
    # Cython from its .pyx only (the build needs Cython); pytest.ini loads pytest-cov; requirements/ci.txt pins
    # pytest 7 and installs the project with `--config-settings`; the tests run the C and the Python class.
    Project("frozenlist", "1.5.0", "setuptools + Cython .pyx, pytest.ini (--cov), requirements/ci.txt", ("tests",),
            ("-r", "requirements/ci.txt"), ("frozenlist/__init__.py", "FrozenList.freeze")),
    # Tests inside the package with their data files; one test serves HTTP on localhost.
    Project("h11", "0.14.0", "flat, setup.py, tests inside the package (helpers, data), no test deps declared",
            ("h11/tests",), ("-e", ".", "pytest"), ("h11/_headers.py", "get_comma_header")),
    Project("xmltodict", "0.13.0", "one module, setup.py (and ez_setup.py), tests/, no test deps declared", ("tests",),
            ("-e", ".", "pytest"), ("xmltodict.py", "unparse")),
    # The jaraco skeleton: --doctest-modules over the package, pytest-enabler turns on pytest-mypy, pytest-ruff and
    # pytest-cov from the extras tox installs (`extras = test check cover enabler type`; `pytest {posargs}`).
    Project("zipp", "3.20.2", "jaraco skeleton: pytest.ini --doctest-modules, pytest-enabler (mypy, ruff, cov)", (),
            ("-e", ".[test,check,cover,enabler,type]"), ("zipp/__init__.py", "_parents")),
    # `*_test.py` modules inside the package, unittest.mock (`mock` on Python 2).
    Project("colorama", "0.4.6", "hatchling, *_test.py inside the package, no test deps in the sdist",
            ("colorama/tests",), ("-e", ".", "pytest"), ("colorama/ansitowin32.py", "AnsiToWin32.extract_params")),
    # tox runs pytest three times (two doctest runs, then the suite with no paths): no one of them is the suite.
    Project("natsort", "8.4.0", "setup.py, tox runs pytest three times, hypothesis, pytest-mock", (),
            ("-e", ".", "pytest", "pytest-mock", "hypothesis"), ("natsort/utils.py", "regex_chooser")),
    # A C extension with a pure-Python fallback, built by setup.py; the tests' conftest collects items of its own
    # (mypy's output on files of tests/mypy). (1.16 and 1.17's conftest takes pytest's `path` argument, which
    # pytest 9 refuses: their suites run under no current pytest.)
    Project("wrapt", "2.0.1", "src, setup.py C ext with a Python fallback, conftest collects its own items", (),
            ("-e", ".[dev]"), ("src/wrapt/_wrappers.c", "WraptObjectProxy_add")),
    # unittest tests (tox runs `coverage run -m unittest discover`), its TestCase in the package, a `testing` extra.
    # A test module sets warnings to errors as it is imported, so pytest's warning that it cannot collect a later
    # module's class is a collection error, which stops plain pytest; the gate's runs go on past a collection
    # error, and so the CI job here does too.
    Project("Markdown", "3.7", "setuptools, unittest suite under coverage in tox, [testing] extra",
            ("tests", "--continue-on-collection-errors"), ("-e", ".[testing]", "pytest"),
            ("markdown/util.py", "code_escape")),
    Project("requests", "2.32.3", "src, setup.py, requirements-dev.txt with -e .[socks], tests serve on localhost",
            ("tests",), ("-r", "requirements-dev.txt"), ("src/requests/utils.py", "get_encoding_from_headers")),
    # pytest's warnings are errors (filterwarnings = error); async tests run under asyncio, trio's are skipped.
    Project("Jinja2", "3.1.4", "src, flit, pip-compiled requirements/tests.txt, warnings are errors", ("tests",),
            ("-e", ".", "-r", "requirements/tests.txt"), ("src/jinja2/filters.py", "do_capitalize")),
    # Its one test module is src/tests/test.py, a name pytest does not collect unless named: its CI runs
    # `python src/tests/test.py` (unittest), and a doctest of its documentation module.
    Project("decorator", "5.1.1", "src, setup.py, unittest module src/tests/test.py (not a test_*.py name)",
            ("src/tests/test.py",), ("-e", ".", "pytest"), ("src/decorator.py", "decorate")),
    # Tests inside the package in a folder named `test`, unittest classes over a helper module.
    Project("pyflakes", "3.2.0", "flat, setuptools, unittest tests inside the package (pyflakes/test)",
            ("pyflakes",), ("-e", ".", "pytest"), ("pyflakes/checker.py", "getNodeName")),
    Project("pathspec", "0.12.1", "flat, setuptools (setup.cfg and pyproject), unittest tests/", ("tests",),
            ("-e", ".", "pytest"), ("pathspec/util.py", "normalize_file")),
    # Its tox runs `python setup.py test`, a command setuptools no longer has.
    Project("appdirs", "1.4.4", "one module, setup.py, test/ unittest, tox runs setup.py test", ("test",),
            ("-e", ".", "pytest"), ("appdirs.py", "user_data_dir")),
    Project("schema", "0.7.7", "one module, setuptools, test_schema.py at the top", ("test_schema.py",),
            ("-e", ".", "pytest"), ("schema.py", "Or.validate")),
    # tox skips the install (pythonpath = src tests); addopts load pytest-cov, doctests of the modules and of
    # the docs' .rst files (testpaths = tests docs), --import-mode=importlib.
    Project("semver", "3.0.2", "src, setuptools, setup.cfg pytest (--cov, rst doctests), tox skip_install", (),
            ("-e", ".", "pytest", "pytest-cov"), ("src/semver/version.py", "Version.compare")),
    # The package `regex` is the folder regex_3 (package_dir), a C extension beside its Python half.
    Project("regex", "2024.9.11", "setup.py package_dir {'regex': 'regex_3'}, C ext, unittest module inside",
            ("regex_3",), ("-e", ".", "pytest"), ("regex_3/regex.py", "escape")),
    # Its conftest imports mypy's test data plugin (the test extra: mypy, flake8, pytest 7.4).
    Project("immutables", "0.21", "flat, setuptools, C ext with a Python twin, conftest loads mypy's plugin",
            ("tests",), ("-e", ".[test]"), ("immutables/_map.c", "map_py_get")),
    # The sdist leaves out tests/helper.py, which two test modules import (the repository's, written here).
    Project("mmh3", "5.0.1", "src, setuptools, C ext only, tests/ with a helper module", ("tests",),
            ("-e", ".", "pytest"), ("src/mmh3/mmh3module.c", "mmh3_hash"),
            repository_files=(("tests/helper.py", MMH3_HELPER),)),
    # A bundled C library (deps/xxhash) and the binding in src/; tests/test.py beside tests/test_*.py.
    Project("xxhash", "3.5.0", "setuptools, C ext over a bundled C library, tests/", ("tests",),
            ("-e", ".", "pytest"), ("src/_xxhash.c", "xxh32_hexdigest")),
    # Its tests are the package's module webencodings/tests.py (`py.test webencodings/tests.py` in its tox).
    Project("webencodings", "0.5.1", "flat, setuptools, tests in the package's tests.py", ("webencodings/tests.py",),
            ("-e", ".", "pytest"), ("webencodings/__init__.py", "lookup")),
    Project("pytz", "2024.2", "flat, setuptools, unittest tests inside the package, its zoneinfo data",
            ("pytz/tests",), ("-e", ".", "pytest"), ("pytz/__init__.py", "timezone")),
    Project("inflection", "0.5.1", "one package, setuptools, test_inflection.py at the top", ("test_inflection.py",),
            ("-e", ".", "pytest"), ("inflection/__init__.py", "pluralize")),
    # Tests inside the package in `glom/test`, with data files (YAML, TOML) they read.
    Project("glom", "23.5.0", "flat, setuptools, tests in glom/test with data files", ("glom/test",),
            ("-e", ".[yaml,toml]", "pytest"), ("glom/core.py", "glom")),
    # test_requirements.txt pins pytest 6.2.5, which does not run on Python 3.10 and later.
    Project("funcy", "2.0", "flat, setuptools, test_requirements.txt (pytest 6.2.5, whatever)", ("tests",),
            ("-e", ".", "pytest", "whatever==0.7"), ("funcy/seqs.py", "take")),
    Project("structlog", "24.4.0", "src, hatch-vcs + fancy-pypi-readme, [tests] extra, tox, conftest", ("tests",),
            ("-e", ".[tests]"), ("src/structlog/processors.py", "KeyValueRenderer.__call__")),
    Project("tenacity", "9.0.0", "flat, setuptools-scm (setup.cfg), [test] extra (tornado, typeguard)", ("tests",),
            ("-e", ".[test]"), ("tenacity/wait.py", "wait_fixed.__call__")),
    Project("parse", "1.20.2", "one module, setuptools (pyproject), tests/", ("tests",), ("-e", ".", "pytest"),
            ("parse.py", "parse")),
    # It patches time for the process; requirements.txt (maya on 3.11, coveralls).
    Project("freezegun", "1.5.1", "flat, setuptools, requirements.txt, tests patch the clock", ("tests",),
            ("-e", ".", "-r", "requirements.txt"), ("freezegun/api.py", "_freeze_time.start")),
    # Locks in tmp_path from threads and processes; a test builds a virtualenv; the [testing] extra, tox.
    Project("filelock", "3.16.1", "src, hatch-vcs, [testing] extra (pytest-timeout, virtualenv), tox", ("tests",),
            ("-e", ".[testing]"), ("src/filelock/_api.py", "BaseFileLock.acquire")),
    Project("iso8601", "2.1.0", "poetry-core, its test module inside the package, no test deps declared",
            ("iso8601",), ("-e", ".", "pytest", "hypothesis", "pytz"), ("iso8601/iso8601.py", "parse_date")),
    Project("python-json-logger", "2.0.7", "src, setuptools (setup.cfg), unittest tests/", ("tests",),
            ("-e", ".", "pytest"), ("src/pythonjsonlogger/jsonlogger.py", "JsonFormatter.format")),
    Project("blinker", "1.8.2", "src, flit, pip-compiled requirements/tests.txt, tox", ("tests",),
            ("-e", ".", "-r", "requirements/tests.txt"), ("src/blinker/base.py", "Signal.connect")),
    # Its tests are the package's `_tests` folder, a name no rule of folders of tests knows.
    Project("sniffio", "1.3.1", "flat, setuptools-scm, tests in the package's _tests", ("sniffio",),
            ("-e", ".", "pytest", "curio"), ("sniffio/_impl.py", "current_async_library")),
    Project("hyperframe", "6.0.1", "src, setup.py, test/ folder, tox", ("test",), ("-e", ".", "pytest"),
            ("src/hyperframe/frame.py", "Frame.parse_flags")),
    # Each test case is an .http body and a .yaml of what it must parse to, read beside the tests.
    Project("python-multipart", "0.0.9", "hatchling, dev extra (pinned), tests reading .http and .yaml data",
            ("tests",), ("-e", ".[dev]"), ("multipart/multipart.py", "parse_options_header")),
    # A new maintainer's round (first met here, nothing tuned for them).
    # pytest 9's native `[tool.pytest]` table (addopts of pytest-benchmark); its Justfile runs `uv run
    # --all-extras --group test pytest -n auto tests`: the tests of its preconf converters (and bench/) import
    # the extras' libraries. (Hypothesis-heavy: plain pytest takes minutes even with xdist on 2 cores.)
    Project("cattrs", "26.2.1", "src, hatch-vcs, [tool.pytest] (pytest 9 TOML), test dependency group, extras",
            ("-n", "auto", "tests"), ("-e", ".[ujson,orjson,msgpack,pyyaml,tomlkit,cbor2,bson,msgspec,tomllib]",
                         "hypothesis>=6.135.26", "pytest>=8.4.1", "pytest-benchmark>=5.1.0", "immutables>=0.21",
                         "coverage>=7.9.2", "pytest-xdist>=3.8.0"),
            ("src/cattrs/converters.py", "BaseConverter.unstructure")),
    # A dependency of pytest itself (pytest imports it before any test: pluggy's case), `ini_options.testpaths`.
    Project("iniconfig", "2.3.1", "src, setuptools-scm write_to, dev group, testing/, pytest's own dependency",
            (), ("-e", ".", "pytest>=8.4.2", "pytest-xdist>=3.8"), ("src/iniconfig/__init__.py", "IniConfig.lineof"),
            ("src/iniconfig/_version.py",), framework=True),
    Project("pyasn1", "0.6.5", "flat, setuptools (pyproject), unittest tests/ in nested packages, no test deps",
            ("tests",), ("-e", ".", "pytest"), ("pyasn1/codec/ber/encoder.py", "Encoder.__call__")),
    Project("termcolor", "3.3.0", "src, hatch-vcs, [tests] extra, tox --cov", (), ("-e", ".[tests]"),
            ("src/termcolor/termcolor.py", "colored")),
    # A pytest plugin by entry point (pytest11), loaded by pytest before any test; tox's TOML table in
    # pyproject.toml (`dependency_groups = ["test"]`); filterwarnings = error.
    Project("typeguard", "4.6.1", "src, setuptools-scm, pytest11 plugin, [tool.tox] dependency_groups, mypy",
            (), ("-e", ".", "coverage[toml]>=7", "pytest>=7", "mypy>=1.2.0"),
            ("src/typeguard/_checkers.py", "check_type_internal")),
    # setup.cfg [tool:pytest] addopts `-m 'not slow' --ignore=tests/testdata`; tox `deps = .[test]` (pytest < 9).
    Project("asttokens", "3.0.2", "flat, setuptools-scm write_to, setup.cfg, tox deps .[test] (pytest<9)", (),
            ("-e", ".[test]"), ("asttokens/asttokens.py", "ASTTextBase.get_text"), ("asttokens/version.py",)),
    # An in-tree PEP 517 backend (`_build_hook`), Cython only on request; nox installs a hashed
    # dev-requirements.txt (pytest 9.0.3; the same pins inline here: pip refuses `-e .` beside hashes);
    # filterwarnings = error, log_level DEBUG.
    Project("charset-normalizer", "3.5.3", "src, in-tree backend, optional Cython, nox, hashed dev-requirements",
            ("tests",), ("-e", ".", "pytest==9.0.3", "coverage>=7.13.5"),
            ("src/charset_normalizer/api.py", "from_bytes")),
    # Its tests are tests.py at the top, beside the module; its makefile runs `python3 -m unittest`.
    Project("jsonpointer", "3.12", "one module, setup.py, unittest tests.py at the top, makefile", ("tests.py",),
            ("-e", ".", "pytest"), ("jsonpointer.py", "resolve_pointer")),
    # pytest 9's native `[tool.pytest]` (testpaths, minversion 9.0); tox extras (pytest-lazy-fixtures).
    Project("prettytable", "3.19.0", "src, hatch-vcs version-file, [tool.pytest] minversion 9, tests extra", (),
            ("-e", ".[tests]"), ("src/prettytable/prettytable.py", "PrettyTable.get_string"),
            ("src/prettytable/_version.py",)),
    # unittest tests that run `cpp`; no test deps declared.
    Project("pycparser", "3.12", "flat, setuptools (pyproject), unittest tests/, runs cpp", ("tests",),
            ("-e", ".", "pytest"), ("pycparser/c_generator.py", "CGenerator.visit")),
    Project("rfc3986", "2.0.0", "src, setup.cfg, no test deps in the sdist", ("tests",), ("-e", ".", "pytest"),
            ("src/rfc3986/normalizers.py", "normalize_scheme")),
    # The RFC's test vectors are a JSON fixture folder (a git submodule, shipped in the sdist).
    Project("uritemplate", "4.2.0", "flat, setup.cfg, tests read JSON fixtures, no test deps declared", ("tests",),
            ("-e", ".", "pytest"), ("uritemplate/api.py", "expand")),
    # tox deps (not extras), `coverage run -m pytest {posargs:tests}`, filterwarnings = error.
    Project("python-slugify", "9.2.0", "flat, setuptools, tox deps, filterwarnings error, CLI tests", (),
            ("-e", ".", "coverage[toml]>=7", "pytest>=8"), ("slugify/slugify.py", "slugify")),
    # Pinned requirements.txt holding `-e .` beside its dev tools (mypy, pre-commit), addopts with --cov,
    # pytest-asyncio in strict mode from setup.cfg.
    Project("async-timeout", "5.0.1", "flat, setuptools, pinned requirements.txt (-e . and dev tools), --cov "
            "addopts, pytest-asyncio strict", (), ("-r", "requirements.txt"),
            ("async_timeout/__init__.py", "timeout")),
    # Tests reading a folder of os-release and lsb_release fixtures per distribution.
    Project("distro", "1.9.0", "src, setuptools, dev-requirements.txt, fixture trees under tests/resources", (),
            ("-e", ".", "pytest", "pytest-cov"), ("src/distro/distro.py", "LinuxDistribution.id")),
    # pythonpath = [".", "utils"] in its pytest configuration: tests import helpers from utils/.
    Project("emoji", "2.14.0", "flat, setuptools, dev extra, pytest pythonpath . and utils", (), ("-e", ".[dev]"),
            ("emoji/core.py", "emojize")),
    # flit_scm: setuptools-scm's post-release scheme writes the version file the build reads.
    Project("exceptiongroup", "1.2.2", "src, flit_scm (post-release version file), test extra, strict config",
            (), ("-e", ".[test]"), ("src/exceptiongroup/_catch.py", "catch"),
            generated=("src/exceptiongroup/_version.py",)),
    # nox sessions installing tests/requirements.txt (pytest-xdist among them).
    Project("installer", "0.7.0", "src, flit, nox, tests/requirements.txt", (), ("-e", ".", "-r",
            "tests/requirements.txt"), ("src/installer/utils.py", "canonicalize_name")),
    # A unittest script tests.py at the top, which its CI runs as `python tests.py` (pytest's default
    # python_files would not collect it).
    Project("jsonpatch", "1.33", "flat single module, setup.py, a unittest script tests.py", ("tests.py",),
            ("-e", "."), ("jsonpatch.py", "apply_patch")),
    # One module and its unittest module side by side in src/, tox running `python -m unittest discover` there.
    Project("typing_extensions", "4.12.2", "src single module, flit, unittest module beside it, tox", ("src",),
            ("-e", "."), ("src/typing_extensions.py", "_get_protocol_attrs")),
    # Its tests inside the package, unittest style; its tox runs a setup.py command.
    Project("boolean.py", "4.0", "flat, setuptools, tests inside the package, requirements-dev.txt", (),
            ("-e", ".", "-r", "requirements-dev.txt"), ("boolean/boolean.py", "BooleanAlgebra.parse")),
    # tox deps with lxml and sybil, whose pytest plugin collects the examples of docs/*.rst.
    Project("cssselect", "1.2.0", "flat, setuptools, tox deps (lxml, sybil), docs/ examples through sybil",
            ("cssselect", "tests", "docs"), ("-e", ".", "lxml>=4.4", "pytest-cov>=2.8", "pytest>=5.4", "sybil"),
            ("cssselect/parser.py", "parse")),
    # poetry-core, its tests inside the package, pytest among poetry's dev dependencies.
    Project("docstring_parser", "0.16", "flat, poetry-core, tests inside the package, poetry dev dependencies", (),
            ("-e", ".", "pytest"), ("docstring_parser/google.py", "parse")),
    # pbr: the version from git, the extras in setup.cfg's [extras] (testing, yaml), tox factors.
    Project("munch", "4.0.0", "flat, pbr (version from git), setup.cfg [extras] testing and yaml, tox factors", (),
            ("-e", ".", "pytest", "PyYAML>=5.1.0"), ("munch/__init__.py", "munchify")),
    # pytest.ini: --doctest-modules, the README's doctests, --ignore=setup.py.
    Project("ordered-set", "4.1.0", "flat package, pytest.ini doctests of the modules and the README", (),
            ("-e", ".", "pytest"), ("ordered_set/__init__.py", "OrderedSet.add")),
    # Its tests in humanfriendly/tests.py, beside humanfriendly/testing.py (helpers for its users); its test
    # requirements bring coloredlogs, which requires humanfriendly itself.
    Project("humanfriendly", "10.0", "flat, setup.py, tests.py inside the package, requirements-tests.txt",
            ("humanfriendly/tests.py",),
            ("-e", ".", "-r", "requirements-tests.txt"), ("humanfriendly/text.py", "pluralize")),
    # coloredlogs/tests.py inside the package; the sdist ships a .pth file of its own.
    Project("coloredlogs", "15.0.1", "flat, setup.py, tests.py inside the package, a .pth in the tree",
            ("coloredlogs/tests.py",),
            ("-e", ".", "-r", "requirements-tests.txt"), ("coloredlogs/__init__.py", "find_defined_levels")),
    # python_files = test/*test_*.py, a test plugin of the package's own (mako.testing), warnings as errors.
    Project("mako", "1.3.6", "flat, setuptools, test/ with the package's own testing helpers, tox", (),
            ("-e", ".", "pytest>=3.1.0", "beaker", "markupsafe", "pygments", "babel", "dogpile.cache", "lingua<4"),
            ("mako/util.py", "to_list")),
    Project("lark", "1.2.2", "flat, setuptools, tests/ unittest style with grammar files", ("tests",),
            ("-e", ".", "pytest"), ("lark/utils.py", "classify")),
    Project("mistune", "3.0.2", "src, setuptools, tests reading text fixtures", (), ("-e", ".", "pytest"),
            ("src/mistune/util.py", "escape")),
    # python_files = test.py and norecursedirs = *: one test module at the top over 7.8 MB of sample files.
    Project("chardet", "5.2.0", "flat, setuptools, test.py at the top over tests/ sample files", (),
            ("-e", ".", "pytest"), ("chardet/__init__.py", "detect")),
    # Sample projects under tests/, warnings as errors, strict config.
    Project("pyproject_hooks", "1.2.0", "src, flit, pytest.ini warnings as errors, sample projects", (),
            ("-e", ".", "-r", "dev-requirements.txt"), ("src/pyproject_hooks/_impl.py", "default_subprocess_runner")),
    # Its test dependencies a PDM dev group (`[tool.pdm.dev-dependencies] testing`), not an extra.
    Project("validators", "0.34.0", "src, setuptools, PDM dev-dependencies", (), ("-e", ".", "pytest>=8.3.2"),
            ("src/validators/email.py", "email")),
    # A fourth round. Both drive programs through pseudo-terminals (bash, cat, the interpreter), unittest style.
    Project("pexpect", "4.9.0", "flat, setup.py, tests/ unittest style driving bash and python through ptys",
            ("tests",), ("-e", ".", "pytest"), ("pexpect/utils.py", "split_command_line")),
    Project("ptyprocess", "0.7.0", "flat, flit's old [tool.flit.metadata], tests/ spawning through ptys",
            ("tests",), ("-e", ".", "pytest"), ("ptyprocess/ptyprocess.py", "PtyProcess.read")),
    # tox.ini's [pytest] with --cov; its test requirements a file under requirements/.
    Project("arrow", "1.4.0", "flat, flit, tox.ini [pytest], requirements/requirements-tests.txt", (),
            ("-e", ".", "-r", "requirements/requirements-tests.txt"), ("arrow/util.py", "is_timestamp")),
    # tests/ a package its modules import from (`from tests.test_lib import ...`); tox's deps, ipython for some.
    Project("python-dotenv", "1.2.4", "src, setuptools, tests/ a package, tox deps", (),
            ("-e", ".", "pytest", "click", "ipython"), ("src/dotenv/main.py", "dotenv_values")),
    # (Not tqdm 4.70.1: its tox environment installs nbval from GitHub, which this machine cannot reach; the
    # gate stops there, exit 3 with uv's error, as it should.)
    Project("toml", "0.10.2", "flat, setup.py, tests/ reading test.toml, tox", ("tests",), ("-e", ".", "pytest"),
            ("toml/encoder.py", "dumps")),
)


@dataclass
class Outcome:
    """One project's row, and why it is not right when it is not."""

    project: Project
    honest: str = "-"
    regression: str = "-"
    tests_gate: str = "-"
    tests_pytest: str = "-"
    times: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    init: str = ""  # what `gate init` said it found and chose


def sdist(project: Project, folder: Path) -> Path:
    """The project's sdist from the cache, downloaded by pip when it is not there yet."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.compile(re.sub(r"[-_.]+", "[-_.]", project.name) + rf"-{re.escape(project.version)}\.tar\.gz$",
                      re.IGNORECASE)
    found = [p for p in folder.iterdir() if stem.match(p.name)]
    if not found:  # its sdist, its build requirements as wheels (pip prepares its metadata with them)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", project.name,
                        "-d", str(folder), f"{project.name}=={project.version}"], check=True)
        found = [p for p in folder.iterdir() if stem.match(p.name)]
    return found[0]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def regress(path: Path, target: str) -> None:
    """Insert `return None` as the first statement of `target` (after its docstring) in `path`, or, in a C
    file, `Py_RETURN_NONE;` as the first statement of the function `target`."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".c":
        path.write_text(_regress_c(text, target), encoding="utf-8")
        return
    nodes: list[ast.stmt] = ast.parse(text).body
    found: ast.stmt | None = None
    for part in target.split("."):
        found = next(n for n in nodes if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == part)
        nodes = found.body
    assert isinstance(found, ast.FunctionDef), target
    body = found.body
    first = body[1] if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else body[0]
    lines = text.splitlines(keepends=True)
    indent = lines[first.lineno - 1][:first.col_offset]  # (its own: tabs in a file indented with tabs)
    lines.insert(first.lineno - 1, indent + REGRESSION + "\n")
    path.write_text("".join(lines), encoding="utf-8")


def _regress_c(text: str, function: str) -> str:
    """`text` with `Py_RETURN_NONE;` after the opening brace of the definition of `function` (not a
    prototype: its parameter list is followed by `{`, not `;`)."""
    for found in re.finditer(rf"^[^;{{}}\n]*\b{re.escape(function)}\s*\(", text, re.MULTILINE):
        brace = re.compile(r"[;{]").search(text, found.end())
        if brace is not None and brace.group() == "{":
            line_end = text.index("\n", brace.end())
            return text[:line_end + 1] + "    " + REGRESSION_C + "\n" + text[line_end + 1:]
    raise ValueError(f"no definition of {function}")


class InitFailed(Exception):
    """`gate init` refused the project's tree (a row of the table, not the end of the run)."""


def repository(project: Project, archive: Path, root: Path) -> tuple[Path, str]:
    """The project as its maintainers' repository: base on `main` (tagged) with the policy `gate init` wrote
    there, heads `honest` and `regression`; and what `gate init` said."""
    with tarfile.open(archive) as tar:
        tar.extractall(root / "unpacked", filter="data")
    repo = root / "repo"
    shutil.copytree(next((root / "unpacked").iterdir()), repo)
    for made in (repo / "PKG-INFO", *repo.glob("*.egg-info"), *repo.glob("*/*.egg-info"), *repo.rglob("__pycache__")):
        shutil.rmtree(made) if made.is_dir() else made.unlink(missing_ok=True)
    for generated in project.generated:
        (repo / generated).unlink(missing_ok=True)
    for path, text in project.repository_files:
        (repo / path).write_text(text)
    ignore = repo / ".gitignore"
    ignore.write_text((ignore.read_text() if ignore.is_file() else "") + "".join(f"/{g}\n" for g in project.generated))
    git(repo, "init", "-q", "-b", "main")
    # Every file the sdist ships, even one its own .gitignore names: the maintainers track those (ujson's
    # `lib/` of C sources, under a `lib/` ignore rule); what the build writes is gone already.
    git(repo, "add", "-A", "--force")
    # The maintainer's first step, on the tree git holds, run from an empty folder (`python -m` puts the
    # working directory first on the gate's import path: PyYAML's tree has a `packaging/`).
    (root / "cwd").mkdir(exist_ok=True)
    init = subprocess.run([sys.executable, "-m", "gate", "init", "--dir", str(repo)], cwd=root / "cwd",
                          capture_output=True, text=True, check=False)
    if init.returncode != 0:
        raise InitFailed(f"exit {init.returncode}: " + (init.stderr.strip().splitlines() or ["no output"])[-1])
    said = init.stdout
    git(repo, "add", "-f", ".github/gate.yml")  # tabulate's own .gitignore ignores every dot-file
    git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "base")
    git(repo, "tag", f"v{project.version}")
    module, function = project.target
    for head in ("honest", "regression"):
        git(repo, "checkout", "-q", "-b", head, "main")
        if head == "honest":
            with (repo / module).open("a", encoding="utf-8") as handle:
                handle.write(HONEST_C if module.endswith(".c") else HONEST)
        else:
            regress(repo / module, function)
        git(repo, "-c", "user.name=bot", "-c", "user.email=bot@example.com", "commit", "-q", "-am", head)
    git(repo, "checkout", "-q", "main")
    return repo, said


# The end of the environment's step in the gate's log (gate/environment/build.py, gate/progress.py).
ENVIRONMENT_BUILT = re.compile(r"^gate: environment: .*: \d+ packages? installed by (\w+) \(([\d.]+) s\)$",
                               re.MULTILINE)


def gate(repo: Path, head: str, cache: Path, out: Path, python: str = sys.executable,
         environ: dict[str, str] | None = None) -> tuple[float, int, dict[str, Any] | None, str]:
    """(seconds, exit code, verdict or None, stderr) of `gate check` of main..head by `python`, run from an
    empty directory: outside the repository (`python -m` would put its files first on the gate's own import
    path), and not above the cache (the runs never see the gate's working directory)."""
    env = {**(environ or os.environ), "GATE_CACHE_DIR": str(cache)}
    where = out.parent / "cwd"
    where.mkdir(exist_ok=True)
    started = time.perf_counter()
    done = subprocess.run([python, "-m", "gate", "check", "--repo", str(repo), "--base", "main",
                           "--head", head, "--json", str(out)], cwd=where, env=env, capture_output=True,
                          text=True, check=False, timeout=3600)
    seconds = time.perf_counter() - started
    verdict = json.loads(out.read_text()) if out.is_file() and out.stat().st_size else None
    out.unlink(missing_ok=True)
    return seconds, done.returncode, verdict, (done.stderr or done.stdout).strip()


def pytest_counts(output: str) -> dict[str, int]:
    """pytest's summary line as counts ("3 failed, 120 passed, 2 skipped in 1.2s")."""
    lines = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|error)", line)]
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", lines[-1])} if lines else {}


@dataclass
class CiJob:
    """A plain CI job on the honest head: how long it took, pytest's counts, and how to run pytest again."""

    seconds: float
    counts: dict[str, int]
    broken: str  # the end of the output when pytest did not run (it passed no test), else ""
    checkout: Path
    command: list[str]
    environ: dict[str, str]  # the job's variables, its venv active


def ci_job(project: Project, repo: Path, root: Path, environ: dict[str, str] | None = None) -> CiJob:
    """What a CI job does on the honest head, timed: a clone, a venv, `pip install -e .` with the test
    dependencies (and pytest when they do not bring it), `python -m pytest`."""
    checkout = root / "checkout"
    venv = root / "venv"
    # The venv active, as a job's `source venv/bin/activate` (or tox) has it: the tests' commands (attrs' mypy
    # tests run `mypy`) are its console scripts.
    # (and bytecode written, as a job's interpreter does: a machine that sets PYTHONDONTWRITEBYTECODE would have
    # every warm run of it compile the project and rewrite its tests again, which no CI job does twice)
    env = {**{key: value for key, value in (environ or os.environ).items() if key != "PYTHONDONTWRITEBYTECODE"},
           "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}:{(environ or os.environ).get('PATH', os.defpath)}"}
    started = time.perf_counter()
    subprocess.run(["git", "clone", "-q", "--branch", "honest", str(repo), str(checkout)], check=True)
    subprocess.run([run_interpreter(), "-m", "venv", str(venv)], check=True, env=env)
    python = str(venv / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "-q", *project.install], cwd=checkout,
                             capture_output=True, text=True, check=False, env=env)
    command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *project.pytest]
    if install.returncode != 0:
        return CiJob(time.perf_counter() - started, {}, "pip install failed: " + install.stderr.strip()[-400:],
                     checkout, command, env)
    if subprocess.run([python, "-c", "import pytest"], capture_output=True, check=False).returncode != 0:
        subprocess.run([python, "-m", "pip", "install", "-q", "pytest"], check=True, capture_output=True, env=env)
    first = subprocess.run(command, cwd=checkout, capture_output=True, text=True, check=False, timeout=3600,
                           env=env)
    seconds = time.perf_counter() - started
    counts = pytest_counts(first.stdout)
    said = (first.stdout + first.stderr).strip()
    return CiJob(seconds, counts, "" if counts.get("passed") else said[-400:] or "no output", checkout, command,
                 env)


def plain_pytest(project: Project, repo: Path, root: Path, warm: int = 1, between: Callable[[], object] = list
                 ) -> tuple[dict[str, float], dict[str, int], dict[str, int], str]:
    """(times, counts on the honest head, counts and exit status (`exit`) on the regression, the end of the
    output when pytest did not run: it passed no test) of a CI job: a checkout, a venv, the install, pytest;
    then pytest warm (the median of `warm` runs, `between` called after each: the gate's, so that both see the
    same load), and the regression installed and run."""
    job = ci_job(project, repo, root)
    if job.broken.startswith("pip install failed"):
        return {}, {}, {}, job.broken

    def run(timeout: float = 3600) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(job.command, cwd=job.checkout, capture_output=True, text=True, check=False,
                                  timeout=timeout, env=job.environ)
        except subprocess.TimeoutExpired as late:  # a hang: CI's job timeout would stop it
            said = late.stdout.decode(errors="replace") if isinstance(late.stdout, bytes) else late.stdout or ""
            return subprocess.CompletedProcess(job.command, -9, said + "\ntimed out", "")

    times = {"pytest cold": job.seconds}
    warm_runs = []
    for _ in range(max(1, warm)):
        started = time.perf_counter()
        run()
        warm_runs.append(time.perf_counter() - started)
        between()
    times["pytest warm"] = statistics.median(warm_runs)
    git(job.checkout, "checkout", "-q", "origin/regression")
    # Installed again, as a job on that head would: an editable install's compiled extension is built from the
    # honest head's C, and only a build sees a regression in it.
    subprocess.run([job.command[0], "-m", "pip", "install", "-q", *project.install], cwd=job.checkout,
                   capture_output=True, check=True, env=job.environ)
    # A regression can hang the suite (aiofiles: a server's handler raises, its client waits for ever).
    regressed = run(timeout=max(120.0, 10 * times["pytest warm"]))
    # Its exit status too: a regression that breaks a conftest's import stops pytest before any summary.
    return times, job.counts, pytest_counts(regressed.stdout) | {"exit": regressed.returncode}, job.broken


def init_choices(said: str) -> list[str]:
    """What `gate init` chose for the suite and its dependencies, and what it did not find, from what it
    printed (the project's own dependencies and the Python left out: every project has them)."""
    return [line for line in said.splitlines() if line.startswith(("found tests:", "found test dependencies:",
                                                                   "found left out:", "not found:"))
            and "requires-python" not in line]


def describe(code: int, verdict: dict[str, Any] | None, error: str) -> tuple[str, list[str], list[str]]:
    """(the verdict in a word, the charged tests, what the gate said when it failed)."""
    if verdict is None or code not in (0, 1):
        lines = error[-600:].splitlines()
        said = [line for line in lines if line.startswith("gate:")] or [  # the gate's own message, else pip's
            line.strip() for line in lines if "Error" in line or "error:" in line] or lines[-1:]
        return f"exit {code}", [], [said[-1] if said else "no output"]
    cases = verdict["cases"]
    charged = [cases[p["case"]]["name"] for p in verdict["penalties"] if p["case"] is not None and
               p["case"] < len(cases) and cases[p["case"]]["kind"] == "pytest"]
    human = not verdict["accepted"] and verdict["total"] <= verdict["budget"] and verdict["blocked_reasons"]
    word = "ACCEPTED" if verdict["accepted"] else "HUMAN" if human else "BLOCKED"
    if human:
        return f"{word} {verdict['total']}/{verdict['budget']}", charged, list(verdict["blocked_reasons"])
    return f"{word} {verdict['total']}/{verdict['budget']}", charged, [p["message"] for p in verdict["penalties"]]


def bench(project: Project, sdists: Path, work: Path, peer: bool, warm: int = 1) -> Outcome:
    outcome = Outcome(project)
    root = work / project.name
    try:
        repo, outcome.init = repository(project, sdist(project, sdists), root)
    except InitFailed as failed:
        outcome.honest = outcome.regression = "no policy"
        outcome.problems.append(f"gate init: {failed}")
        return outcome
    cache = root / "gate-cache"
    out = root / "verdict.json"
    outcome.times["gate cold"] = gate(repo, "honest", cache, out)[0]
    warm_runs = []  # (seconds, exit code, verdict, stderr) of each warm run: the first one's verdict is reported

    def gate_warm() -> None:
        warm_runs.append(gate(repo, "honest", cache, out))

    # Each warm run of the gate right after one of plain pytest's.
    times, counts, regressed, broken = plain_pytest(project, repo, root, warm, gate_warm) if peer \
        else ({}, {}, {}, "")
    while len(warm_runs) < max(1, warm):
        gate_warm()
    outcome.times |= times
    if broken:
        outcome.problems.append(f"plain pytest did not run: {broken}")
    if counts and not regressed.get("exit"):
        outcome.problems.append("the regression fails no test under plain pytest either (a bad bench target)")
    outcome.times["gate warm"] = statistics.median(seconds for seconds, *_ in warm_runs)
    _, code, verdict, error = warm_runs[0]
    outcome.honest, _, said = describe(code, verdict, error)
    # A skipped or xfailed test did not fail, so its case passed; its detail says which (plain pytest counts
    # neither as passed).
    passed = [c for c in (verdict or {}).get("cases", []) if c["kind"] == "pytest" and c["status"] == "passed"
              and not c["detail"].startswith(("skipped", "xfailed"))]
    outcome.tests_gate = str(len(passed)) if verdict else "-"
    outcome.tests_pytest = str(counts.get("passed", "-"))
    if not outcome.honest.startswith("HUMAN" if project.framework else "ACCEPTED"):
        outcome.problems.append("honest change: " + outcome.honest + ": " + "; ".join(said)[:500])
    elif counts and abs(len(passed) - counts.get("passed", 0)) > PASSED_WITHIN:
        outcome.problems.append(f"honest change: the gate passed {len(passed)} tests, plain pytest "
                                f"{counts.get('passed', 0)}")
    _, code, verdict, error = gate(repo, "regression", cache, out)
    word, charged, said = describe(code, verdict, error)
    outcome.regression = word + (f" ({charged[0]})" if charged and word.startswith("BLOCKED") else "")
    if project.framework and word.startswith("HUMAN"):
        pass  # what no suite can test went to a human
    elif not word.startswith("BLOCKED") or not charged:
        outcome.problems.append("regression: " + word + ": " + ("; ".join(said)[:500] or "no test charged") +
                                f" (plain pytest: {regressed.get('failed', 0)} failed, exit {regressed.get('exit')})")
    return outcome


def fresh_caches(folder: Path) -> dict[str, str]:
    """This process's variables with pip's and uv's caches in the new folder `folder` (as on a hosted runner:
    nothing downloaded before)."""
    folder.mkdir(parents=True)
    kept = {k: v for k, v in os.environ.items() if k not in ("PIP_CACHE_DIR", "UV_CACHE_DIR", "PIP_NO_CACHE_DIR")}
    return {**kept, "XDG_CACHE_HOME": str(folder)}


def gate_without_uv(folder: Path) -> str:
    """An interpreter of this gate with no uv beside it (a virtual environment of the same Python that imports
    what the gate's own environment holds): the gate then builds environments with pip."""
    base = Path(sys.base_prefix, "bin", f"python{sys.version_info[0]}.{sys.version_info[1]}")
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(folder)], check=True)
    site = next(folder.glob("lib/python*/site-packages"))
    (site / "gate-env.pth").write_text(f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n")
    return str(folder / "bin" / "python")


@dataclass
class Cold:
    """One project's cold row: the CI job, the gate with uv and with pip (seconds, and of that the
    environment's build), and the verdicts."""

    project: Project
    ci: float = 0.0
    gate: dict[str, float] = field(default_factory=dict)  # installer -> seconds of `gate check`
    environment: dict[str, float] = field(default_factory=dict)  # installer -> seconds of the environment's build
    verdicts: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def judged(self) -> bool:
        """Whether the gate gave its verdict (a run that stopped with exit 3 is no time to compare)."""
        return bool(self.verdicts) and all(not word.startswith("exit") for word in self.verdicts.values())

    def ratio(self, installer: str = "uv") -> float:
        return self.gate.get(installer, 0.0) / self.ci if self.ci else 0.0


def cold(project: Project, sdists: Path, work: Path, no_uv: str) -> Cold:
    """The CI job, the gate with uv and the gate with pip, one after the other on the honest head, each from
    nothing (fresh caches)."""
    outcome = Cold(project)
    root = work / project.name
    try:
        repo, _ = repository(project, sdist(project, sdists), root)
    except InitFailed as failed:
        outcome.problems.append(f"gate init: {failed}")
        return outcome
    job = ci_job(project, repo, root / "ci", fresh_caches(root / "ci-caches"))
    outcome.ci = job.seconds
    if job.broken:
        outcome.problems.append(f"plain CI did not run: {job.broken}")
    for installer, python in (("uv", sys.executable), ("pip", no_uv)):
        place = root / f"gate-{installer}"
        place.mkdir()
        seconds, code, verdict, said = gate(repo, "honest", place / "cache", place / "verdict.json", python,
                                            fresh_caches(place / "caches"))
        outcome.gate[installer] = seconds
        built = ENVIRONMENT_BUILT.search(said)
        if built and built.group(1) == installer:
            outcome.environment[installer] = float(built.group(2))
        else:
            outcome.problems.append(f"gate ({installer}): no environment built by {installer} in its log")
        word, _, why = describe(code, verdict, said)
        outcome.verdicts[installer] = word
        if not word.startswith("HUMAN" if project.framework else "ACCEPTED"):
            outcome.problems.append(f"gate ({installer}): {word}: " + "; ".join(why)[:300])
    return outcome


def cold_table(outcomes: list[Cold]) -> str:
    head = ("project", "verdict", "CI job s", "gate s", "gate/CI", "gate (pip) s", "gate (pip)/CI",
            "environment uv/pip s")
    rows = [head]
    for o in outcomes:
        rows.append((o.project.label, o.verdicts.get("uv", "-"), f"{o.ci:.1f}", f"{o.gate.get('uv', 0):.1f}",
                     f"{o.ratio():.2f}x", f"{o.gate.get('pip', 0):.1f}", f"{o.ratio('pip'):.2f}x",
                     f"{o.environment.get('uv', 0):.1f}/{o.environment.get('pip', 0):.1f}"))
    judged = [o for o in outcomes if o.judged and o.ci]
    if judged:
        rows.append(("median", f"{len(judged)} judged", f"{statistics.median(o.ci for o in judged):.1f}",
                     f"{statistics.median(o.gate['uv'] for o in judged):.1f}",
                     f"{statistics.median(o.ratio() for o in judged):.2f}x",
                     f"{statistics.median(o.gate['pip'] for o in judged):.1f}",
                     f"{statistics.median(o.ratio('pip') for o in judged):.2f}x",
                     f"{statistics.median(o.environment.get('uv', 0) for o in judged):.1f}/"
                     f"{statistics.median(o.environment.get('pip', 0) for o in judged):.1f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def table(outcomes: list[Outcome]) -> str:
    head = ("project", "shape", "honest", "regression", "tests gate/pytest", "gate warm/cold s",
            "pytest warm/cold s")
    rows = [head]
    for o in outcomes:
        t = o.times
        rows.append((o.project.label, o.project.shape, o.honest, o.regression[:48],
                     f"{o.tests_gate}/{o.tests_pytest}",
                     f"{t.get('gate warm', 0):.1f}/{t.get('gate cold', 0):.1f}",
                     f"{t.get('pytest warm', 0):.1f}/{t.get('pytest cold', 0):.1f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "gate-bench",
                        help="where the sdists are kept (never the repository)")
    parser.add_argument("--only", nargs="*", help="project names (default: all)")
    parser.add_argument("--json", type=Path, help="write the outcomes here too")
    parser.add_argument("--no-pytest", action="store_true", help="the gate only, not plain pytest's CI job")
    parser.add_argument("--cold", action="store_true",
                        help="a hosted runner's job from nothing: the CI job, the gate with uv and with pip, side by "
                             "side on the honest head (see the module's docstring)")
    parser.add_argument("--warm", type=int, default=1, metavar="N",
                        help="warm runs of the gate and of plain pytest each, one after the other, their medians "
                             "reported (default 1)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="projects benched at once (more than 1 finds the verdicts sooner; the times then "
                             "share the machine)")
    args = parser.parse_args()
    chosen = [p for p in PROJECTS if not args.only or p.name in args.only]
    sdists = args.cache / "sdists"
    for project in chosen:  # downloads first, one at a time
        sdist(project, sdists)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    if args.cold:
        cold_main(chosen, sdists, args.jobs, load, args.json)
        return
    with tempfile.TemporaryDirectory(prefix="gate-breadth-") as folder:

        def one(project: Project) -> Outcome:
            outcome = bench(project, sdists, Path(folder), not args.no_pytest, args.warm)
            print(table([outcome]).splitlines()[-1], file=sys.stderr, flush=True)
            for problem in outcome.problems:
                print(f"- {project.label}: {problem}", file=sys.stderr, flush=True)
            return outcome

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            outcomes = list(pool.map(one, chosen))
    print(f"load average at the start: {load}; at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"{args.jobs} project(s) at a time")
    print(table(outcomes))
    for o in outcomes:
        for problem in o.problems:
            print(f"- {o.project.label}: {problem}")
    print("\nThe policy `gate init` wrote, in its words:")
    for o in outcomes:
        print(f"- {o.project.label}: " + "; ".join(init_choices(o.init)))
    if args.json:
        args.json.write_text(json.dumps([{"project": o.project.label, "shape": o.project.shape, "honest": o.honest,
                                          "regression": o.regression, "tests_gate": o.tests_gate,
                                          "tests_pytest": o.tests_pytest, "times": o.times,
                                          "problems": o.problems, "init": o.init} for o in outcomes], indent=2))


def cold_main(chosen: list[Project], sdists: Path, jobs: int, load: str, out: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="gate-breadth-cold-") as folder:
        no_uv = gate_without_uv(Path(folder) / "gate-without-uv")

        def one(project: Project) -> Cold:
            outcome = cold(project, sdists, Path(folder), no_uv)
            print(cold_table([outcome]).splitlines()[2], file=sys.stderr, flush=True)
            for problem in outcome.problems:
                print(f"- {project.label}: {problem}", file=sys.stderr, flush=True)
            return outcome

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            outcomes = list(pool.map(one, chosen))
    print(f"cold: load average at the start: {load}; at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"{jobs} project(s) at a time")
    print(cold_table(outcomes))
    for o in outcomes:
        for problem in o.problems:
            print(f"- {o.project.label}: {problem}")
    if out:
        out.write_text(json.dumps([{"project": o.project.label, "ci": o.ci, "gate": o.gate,
                                    "environment": o.environment, "verdicts": o.verdicts, "problems": o.problems}
                                   for o in outcomes], indent=2))


if __name__ == "__main__":
    main()
