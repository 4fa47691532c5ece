"""Each case kind on honest programs, the is_even example, and clear errors for malformed cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gate.cases import KINDS
from gate.cases.base import Program
from gate.errors import BadInput
from gate.policy_file import load_policy
from gate.sandbox.base import Sandbox
from tests.cases_support import IS_EVEN, LIMITS, NAIVE_IS_EVEN, case, run

SUM_TWO = "import sys\n\na, b = map(int, sys.stdin.read().split())\nprint(a + b)\n"

# Hidden cases for is_even (examples/is_even), as call cases.
IS_EVEN_CASES = [
    case("call", "2 is even", args=[2], expect=True),
    case("call", "3 is odd", args=[3], expect=False),
    case("call", "True is not an int", args=[True], error="TypeError"),
    case("call", "None is not an int", args=[None], error="TypeError"),
]


def test_seed_is_even_passes_when_honest(sandbox: Sandbox) -> None:
    assert [run(sandbox, spec, IS_EVEN).status for spec in IS_EVEN_CASES] == ["passed"] * 4


def test_seed_naive_is_even_fails_true(sandbox: Sandbox) -> None:
    outcome = run(sandbox, IS_EVEN_CASES[2], NAIVE_IS_EVEN)
    assert outcome.status == "failed"
    assert outcome.detail == "expected TypeError, returned bool False"


def test_returning_1_for_true_fails(sandbox: Sandbox) -> None:
    outcome = run(sandbox, IS_EVEN_CASES[0], "def is_even(n):\n    return 1\n")
    assert outcome.status == "failed"
    assert "expected bool True, got int 1" in outcome.detail


def test_seed_sum_two_numbers_over_stdin(sandbox: Sandbox) -> None:
    spec = case("stdio", "sum", stdin="5\n7\n", stdout="12")
    assert run(sandbox, spec, SUM_TWO).status == "passed"
    wrong = run(sandbox, spec, SUM_TWO.replace("a + b", "a * b"))
    assert (wrong.status, wrong.detail) == ("failed", "stdout line 1: expected '12', got '35'")


def test_stdio_args_regex_and_exit_code(sandbox: Sandbox) -> None:
    code = "import sys\nprint('hello', *sys.argv[1:], '  ')\nsys.exit(3)\n"
    spec = case("stdio", args=["a", "b"], stdout="hello a b", exit_code=3)
    assert run(sandbox, spec, code).status == "passed"
    assert run(sandbox, case("stdio", stdout_regex=r"^hel+o$", exit_code=3), code).status == "passed"
    outcome = run(sandbox, case("stdio", stdout="hello"), code)
    assert (outcome.status, outcome.detail) == ("failed", "exit status: expected 0, got 3")


def test_stdio_program_and_module_of_a_tree(sandbox: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "__main__.py").write_text("import sys\nprint('main', sys.argv[1:])\n")
    (tmp_path / "tool.py").write_text("print(input()[::-1])\n")
    program = Program(tree=tmp_path)
    stdio = KINDS["stdio"]
    module = case("stdio", module="pkg", args=["x"], stdout="main ['x']")
    script = case("stdio", program="tool.py", stdin="abc\n", stdout="cba")
    assert stdio.run(module, program, sandbox, LIMITS, 1).status == "passed"
    assert stdio.run(script, program, sandbox, LIMITS, 1).status == "passed"


def test_call_into_a_tree_by_module_and_function(sandbox: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "mathx").mkdir()
    (tmp_path / "mathx" / "__init__.py").write_text("")
    (tmp_path / "mathx" / "ops.py").write_text(
        "def mean(xs, *, weights=None):\n    return sum(xs) / len(xs)\n")
    spec = case("call", function="mathx.ops:mean", args=[[0.1, 0.2]], kwargs={"weights": None},
                expect=0.15, tol=1e-12)
    assert KINDS["call"].run(spec, Program(tree=tmp_path), sandbox, LIMITS, 1).status == "passed"
    exact = case("call", function="mathx.ops:mean", args=[[0.1, 0.2]], expect=0.15)
    assert KINDS["call"].run(exact, Program(tree=tmp_path), sandbox, LIMITS, 1).status == "failed"


def test_call_finds_the_function_the_reply_or_task_names(sandbox: Sandbox) -> None:
    code = "def helper(x):\n    return x\n\ndef double(x):\n    return helper(x) * 2\n"
    spec = case("call", args=[4], expect=8)
    assert run(sandbox, spec, code, function="double").status == "passed"
    assert run(sandbox, spec, code).status == "error"  # two functions, none named
    assert run(sandbox, spec, "def double(x):\n    return x * 2\n").status == "passed"


def test_call_expected_exceptions_match_by_type_name(sandbox: Sandbox) -> None:
    code = "class ParseError(Exception):\n    pass\n\ndef parse(s):\n    raise ParseError(s)\n"
    assert run(sandbox, case("call", args=["x"], error="ParseError"), code).status == "passed"
    assert run(sandbox, case("call", args=["x"], error="candidate.ParseError"), code).status == "passed"
    assert run(sandbox, case("call", args=["x"], error="ValueError"), code).status == "failed"
    fake = "class TypeError(Exception):\n    pass\n\ndef parse(s):\n    raise TypeError(s)\n"
    assert run(sandbox, case("call", args=["x"], error="TypeError"), fake).status == "failed"


HUMANEVAL: dict[str, Any] = {
    "prompt": 'def add(a: int, b: int) -> int:\n    """Add two numbers."""\n',
    "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n",
    "entry_point": "add",
}


def test_humaneval_completion_and_full_function(sandbox: Sandbox) -> None:
    spec = case("humaneval", **HUMANEVAL)
    assert run(sandbox, spec, "    return a + b\n").status == "passed"
    assert run(sandbox, spec, HUMANEVAL["prompt"] + "    return a + b\n").status == "passed"
    wrong = run(sandbox, spec, "    return a - b\n")
    assert wrong.status == "failed"
    assert wrong.detail == "AssertionError at line 2: assert candidate(2, 3) == 5; the last call returned int"


def test_humaneval_helpers_come_from_the_prompt_not_the_completion(sandbox: Sandbox) -> None:
    prompt = 'def secret(x):\n    return x * 7\n\n\ndef solve(x):\n    """The y with secret(y) == x."""\n'
    test = "def check(candidate):\n    assert secret(candidate(14)) == 14\n"
    spec = case("humaneval", prompt=prompt, test=test, entry_point="solve")
    assert run(sandbox, spec, "    return x // 7\n").status == "passed"
    cheat = "    return 14\n\ndef secret(x):\n    return x\n"  # redefines the prompt's helper to win
    assert run(sandbox, spec, cheat).status == "failed"


def test_mbpp_asserts_setup_and_in_place_classes(sandbox: Sandbox) -> None:
    spec = case("mbpp", setup="import math", tests=["assert area(1) == math.pi", "assert area(0) == 0"])
    assert run(sandbox, spec, "import math\ndef area(r):\n    return math.pi * r * r\n").status == "passed"
    failed = run(sandbox, spec, "def area(r):\n    return 3\n")
    assert failed.detail.startswith("AssertionError in test 0: assert area(1) == math.pi")
    pairs = case("mbpp", tests=["assert longest([Pair(1, 2), Pair(3, 9)]) == 6"])
    code = ("class Pair:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n\n"
            "def longest(ps):\n    return max(p.b - p.a for p in ps)\n")
    outcome = run(sandbox, pairs, code)
    assert (outcome.status, outcome.detail) == ("passed", "in-process, weaker isolation")
    anything = code + "\nclass Anything:\n    def __eq__(self, other):\n        return True\n\n" \
        "def longest(ps):\n    return Anything()\n"
    cheat = run(sandbox, pairs, anything)
    assert cheat.status == "failed"
    assert cheat.detail.startswith("NoData: returned not data: candidate.Anything in test 0")
    assert cheat.detail.endswith("(in-process, weaker isolation)")


@pytest.mark.parametrize(("case_yaml", "key", "message"), [
    ("{kind: call, args: [1]}", "cases[0]", "give exactly one of `expect` or `error`"),
    ("{kind: call, args: [1], expect: 1, error: E}", "cases[0]", "give exactly one of `expect` or `error`"),
    ("{kind: call, args: 1, expect: 1}", "cases[0].args", "expected a list, got the integer 1"),
    ("{kind: call, error: E, tol: 0.1}", "cases[0]", "`tol` needs `expect`"),
    ("{kind: call, expect: 1, tol: true}", "cases[0].tol", "expected a number, got the boolean true"),
    ("{kind: call, expect: 1, expected: 2}", "cases[0].expected", "unknown key; did you mean `expect`?"),
    ("{kind: call, expect: 2024-01-01}", "cases[0].expect", r"not data: datetime.date \(JSON values only\)"),
    ("{kind: stdio, stdout: x, stdout_regex: y}", "cases[0]", "give `stdout` or `stdout_regex`, not both"),
    ("{kind: stdio, stdout_regex: '('}", "cases[0].stdout_regex", "not a valid regular expression"),
    ("{kind: stdio, args: [1]}", "cases[0].args[0]", "expected a string, got the integer 1"),
    ("{kind: stdio, program: a.py, module: a}", "cases[0]", "give `program` or `module`, not both"),
    ("{kind: humaneval, prompt: '', test: 'def check(c): assert 1'}", "cases[0]",
     "missing required key `entry_point`"),
    ("{kind: humaneval, prompt: '', entry_point: f, test: 'def check(c) pass'}", "cases[0].test",
     "does not parse"),
    ("{kind: mbpp, tests: []}", "cases[0].tests", "must list at least 1 item"),
    ("{kind: mbpp, tests: ['assert f(1) ==']}", "cases[0].tests", "does not parse"),
    ("{kind: mbpp, tests: ['assert 1 == 1']}", "cases[0].tests",
     "the asserts call no function the candidate could define"),
])
def test_malformed_cases_are_bad_input_naming_the_file_line_and_field(case_yaml: str, key: str,
                                                                      message: str) -> None:
    # A case is validated once, when the file that holds it is loaded: the schema, then what only its kind can
    # tell (a pattern that does not compile, code that does not parse, a value that is not JSON data).
    text = f"budget: 3\ncases:\n  - {case_yaml}\n"
    with pytest.raises(BadInput, match=message) as raised:
        load_policy(None, text=text, source="gate.yml")
    assert (raised.value.file, raised.value.line, raised.value.key) == ("gate.yml", 3, key)
    assert raised.value.exit_code == 2
