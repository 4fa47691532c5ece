"""Red-team attacks on the framework check's reading of `__eq__`/`__ne__` (docs/repository.md): objects that
compare equal to anything, in the shapes that dodge a check of `def __eq__` bodies alone. Each makes every
`assert f(x) == y` of the base's tests pass in the tests' own process, so the static check is what must stop it;
honest comparisons, including those that branch on the other operand and return constants, still pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.engine import run_checks
from gate.policy_file import load_policy
from gate.subject import SourceFile, Subject
from tests.projects import gate_cache, gate_cache_root, offline_pip, wheelhouse  # noqa: F401
from tests.suite_support import BASE_TESTS, CALC, POLICY, calc_project, framework_flags, score_repo, suite_statuses

# Each binds an always-equal comparison to a class `Product`; `mul` returns one.
DODGES = {
    "assigned-after-the-class": "class Product:\n    pass\n\n\nProduct.__eq__ = lambda self, other: True\n",
    "an-alias": "def _same(a, b):\n    return True\n\n\nclass Product:\n    __eq__ = _same\n",
    "a-truthy-list": "class Product:\n    def __eq__(self, other):\n        return [other]\n",
    "other-is-other": "class Product:\n    def __eq__(self, other):\n        return other is other\n",
    "star-args": "class Product:\n    def __eq__(self, *args):\n        return True\n",
    "reads-then-ignores": "class Product:\n    ok = True\n\n    def __eq__(self, other):\n        del other\n"
                          "        return self.ok\n",
    "setattr": "class Product:\n    pass\n\n\nsetattr(Product, '__eq__', lambda s, o: True)\n",
    "type-call": "Product = type('Product', (), {'__eq__': lambda s, o: True})\n",
    "or-true": "class Product:\n    def __eq__(self, other):\n        return bool(other) or True\n",
    "partialmethod": "import functools\n\n\ndef _same(a, b, c):\n    return True\n\n\nclass Product:\n"
                     "    __eq__ = functools.partialmethod(_same, 1)\n",
    "branch-same-result": "class Product:\n    def __eq__(self, other):\n        if other == 6:\n"
                          "            return True\n        return True\n",
}
HONEST = {
    "branch-on-other": "class Product:\n    def __eq__(self, other):\n        if isinstance(other, Product) and "
                       "other.x == self.x:\n            return True\n        return False\n",
    "a-local-from-other": "class Product:\n    def __eq__(self, other):\n        theirs = getattr(other, 'x', "
                          "other)\n        return theirs == self.x\n",
    "early-false": "class Product:\n    def __eq__(self, other):\n        for mine, theirs in zip(self.x, other.x):\n"
                   "            if mine != theirs:\n                return False\n        return True\n",
    "try-except": "class Product:\n    def __eq__(self, other):\n        try:\n            theirs = other.x\n"
                  "        except AttributeError:\n            return False\n        return theirs == self.x\n",
    "not-implemented": "class Product:\n    def __eq__(self, other):\n        return NotImplemented\n",
    "ne-from-eq": "class Product:\n    __ne__ = lambda self, other: not self == other\n",
}


def _flagged(code: str) -> list[str]:
    return framework_flags(code, "calc.py")


@pytest.mark.parametrize("name", sorted(DODGES))
def test_an_always_equal_comparison_in_any_shape_is_blocked_for_a_human(name: str) -> None:
    assert _flagged(DODGES[name]), name


@pytest.mark.parametrize("name", sorted(HONEST))
def test_an_honest_comparison_is_not_flagged(name: str) -> None:
    assert not _flagged(HONEST[name]), name


def _calc_with(product: str, mul: str) -> str:
    return f"{product}\n\n{CALC.replace('    return a * b', mul)}"


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
@pytest.mark.parametrize("name", ["assigned-after-the-class", "star-args"])
def test_a_dodging_always_equal_result_passes_the_tests_but_is_blocked(tmp_path: Path, name: str) -> None:
    repo = calc_project(tmp_path / "repo")
    repo.commit("bot: mul", {"calc.py": _calc_with(DODGES[name], "    return Product()")})

    verdict = score_repo(repo)

    # The object passes `assert mul(two, 3) == 6` in the tests' process: the check names it, and the run's
    # confirmation of that equality sees an object equal to everything (tests/test_redteam_equality.py).
    assert not verdict.accepted
    assert any("test framework" in reason and "calc.py" in reason for reason in verdict.blocked_reasons), \
        verdict.blocked_reasons
    assert verdict.tampered and "calc.Product" in verdict.tampered[0].seen, verdict.tampered


@pytest.mark.slow
@pytest.mark.usefixtures("offline_pip")
def test_an_honest_result_type_with_a_branching_eq_is_accepted(tmp_path: Path) -> None:
    product = ("class Product:\n    def __init__(self, x):\n        self.x = x\n\n    def __eq__(self, other):\n"
               "        if getattr(other, 'x', other) == self.x:\n            return True\n        return False\n")
    repo = calc_project(tmp_path / "repo")
    repo.commit("bot: mul", {"calc.py": _calc_with(product, "    return Product(a * b)")})

    verdict = score_repo(repo)

    assert suite_statuses(verdict) == dict.fromkeys(BASE_TESTS, "passed")
    assert verdict.accepted, verdict.blocked_reasons


SCOPED = """\
budget: 1
scopes:
  - name: calc
    paths: ["calc/**"]
    tests:
      paths: [tests/calc]
"""


@pytest.mark.parametrize(("path", "flagged"), [("calc/product.py", True), ("tests/calc/helpers.py", False)],
                         ids=["library", "the-scopes-tests"])
def test_a_scopes_suite_alone_turns_the_check_on(path: str, flagged: bool) -> None:
    # Only a scope runs the repository's tests: they share a process with the library all the same.
    policy = load_policy(None, text=SCOPED, source="gate.yml")
    subject = Subject(kind="range", label="a..b", files=(SourceFile(path, DODGES["star-args"]),))

    reasons = [reason for reason in run_checks(subject, policy).blocked_reasons if "test framework" in reason]

    assert bool(reasons) == flagged, reasons


@pytest.mark.parametrize(("path", "status", "flagged"), [
    ("tempfile.py", "added", True), ("src/tempfile.py", "added", True), ("json/__init__.py", "added", True),
    ("src/pdb/__init__.py", "renamed", True), ("lib/inspect.py", "added", True),
    ("calc/tempfile.py", "added", False), ("tests/tempfile.py", "added", False), ("tempfile.py", "modified", False),
    ("json/helpers.py", "added", False), ("tempfiles.py", "added", False), ("README.md", "added", False)],
    ids=lambda value: str(value))
def test_a_module_named_like_the_standard_librarys_at_an_import_root_is_for_a_human(
        path: str, status: str, flagged: bool) -> None:
    """The tests' process has the tree first on its path (as `python -m pytest` does): pytest and the standard
    library would import such a module themselves, whatever calls it (docs/repository.md). One inside a package,
    under the test paths, or one the base has already is not that."""
    policy = load_policy(None, text=POLICY, source="gate.yml")
    source = SourceFile(path, "VALUE = 1\n", status=status)  # type: ignore[arg-type]
    subject = Subject(kind="range", label="a..b", files=(source,), import_roots=("lib",))

    reasons = [reason for reason in run_checks(subject, policy).blocked_reasons if "standard library" in reason]

    assert bool(reasons) == flagged, reasons
    if flagged:
        name = path.removesuffix("/__init__.py").removesuffix(".py").rpartition("/")[2]
        assert reasons == [f"the change adds {path}, a module named like the standard library's `{name}`: the "
                           "tests' process has the tree first on its import path (as `python -m pytest` does), so "
                           "pytest and the standard library import it in place of their own; a human must review it"]


def test_unittest_mock_s_any_resolved_by_pkgutil_is_a_dynamic_loader() -> None:
    """`pkgutil.resolve_name` imports what a string names and hands out any object of it (`unittest.mock:ANY`,
    equal to everything): the fast reject names it; the suite's run confirms what it returns
    (tests/test_redteam_equality.py)."""
    code = 'import pkgutil\n\n\ndef mul(a, b):\n    return pkgutil.resolve_name("unittest.mock:ANY")\n'
    flags = _flagged(code)
    assert flags and 'pkgutil.resolve_name("unittest.mock:ANY") at calc.py:5' in flags[0], flags
