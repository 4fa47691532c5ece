"""The claims check: an O(1) claim on a function whose body loops fails, with the claim's and the loop's line."""

from __future__ import annotations

import pytest

from gate.policy.model import ClaimRules, Policy
from gate.subject import SourceFile
from tests.helpers_static import check, fenced, penalty, score_files, score_reply


def test_a_loop_under_an_o1_docstring_fails_with_both_lines() -> None:
    code = ('def is_even(n):\n'
            '    """Say whether n is even in O(1)."""\n'
            '    while n > 1:\n'
            '        n -= 2\n'
            '    return n == 0\n')
    found = penalty(score_reply(fenced(code)), "claims")
    assert found.points == 3
    assert [(loc.path, loc.line) for loc in found.locations] == [("solution.py", 2), ("solution.py", 3)]
    assert "is_even() claims" in found.message
    assert "while loop at solution.py:3" in found.message


def test_claim_on_a_later_docstring_line_points_at_that_line() -> None:
    code = 'def f(xs):\n    """Sum.\n\n    Runs in constant time.\n    """\n    return sum(xs)\n'
    found = penalty(score_files([SourceFile("m.py", code)]), "claims")
    assert [loc.line for loc in found.locations] == [4, 6]


@pytest.mark.parametrize(("code", "claim_line"), [
    ("# O(1) lookup\ndef f(xs):\n    return [x for x in xs]\n", 1),
    ("# Helpers.\n#\n# Constant-time check.\n@staticmethod\ndef f(xs):\n    for x in xs:\n        pass\n", 3),
    ("def f(xs):  # O(1)\n    for x in xs:\n        pass\n", 1),
    ("def f(\n    xs,  # O( 1 ) overall\n):\n    for x in xs:\n        pass\n", 2),
])
def test_claims_in_comments_on_or_above_the_def(code: str, claim_line: int) -> None:
    found = penalty(score_files([SourceFile("m.py", code)]), "claims")
    assert found.locations[0].line == claim_line


def test_a_comment_separated_by_code_is_not_about_the_function() -> None:
    code = "# O(1)\nx = 1\ndef f(xs):\n    for x in xs:\n        pass\n"
    assert score_files([SourceFile("m.py", code)]).total == 0


def test_the_replys_prose_naming_the_function_is_a_claim() -> None:
    reply = ("`is_even` runs in O(1) time.\n\n"
             + fenced("def is_even(n):\n    return all(True for _ in range(n)) or n % 2 == 0\n\n"
                      "def helper():\n    return 1\n"))
    found = penalty(score_reply(reply), "claims")
    assert (found.locations[0].path, found.locations[0].line) == ("reply.md", 1)
    assert found.locations[1].line == 2


def test_prose_without_a_name_applies_when_the_code_has_one_function() -> None:
    reply = "It runs in O(1).\n\n" + fenced("def f(n):\n    return f(n - 1) if n else 0\n")
    assert "recursive call" in penalty(score_reply(reply), "claims").message


@pytest.mark.parametrize("docstring", [
    "O(n) time, O(1) space.", "Uses O(1) extra memory.", "Space complexity: O(1).",
    "Amortized O(1) per call.", "This is O(n), not O(1).",
])
def test_space_amortized_and_negated_claims_are_not_time_claims(docstring: str) -> None:
    code = f'def f(xs):\n    """{docstring}"""\n    for x in xs:\n        pass\n'
    assert score_files([SourceFile("m.py", code)]).total == 0


@pytest.mark.parametrize(("body", "kind"), [
    ("    return sum(xs)\n", "call of sum()"),
    ("    return sorted(xs)[0]\n", "call of sorted()"),
    ("    return {x: 1 for x in xs}\n", "comprehension"),
    ("    return f(xs[1:])\n", "recursive call"),
    ("    async for x in xs:\n        pass\n", "for loop"),
])
def test_what_counts_as_a_loop(body: str, kind: str) -> None:
    prefix = "async " if "async" in body else ""
    code = f'{prefix}def f(xs):\n    """O(1)."""\n{body}'
    assert kind in penalty(score_files([SourceFile("m.py", code)]), "claims").message


@pytest.mark.parametrize("body", [
    "    return max(xs[0], xs[-1])\n",
    "    return min((1, 2, 3))\n",
    "    return 3 in xs\n",
    "    return len(xs)\n",
])
def test_constant_work_is_not_a_loop(body: str) -> None:
    code = f'def f(xs):\n    """O(1)."""\n{body}'
    assert score_files([SourceFile("m.py", code)]).total == 0


def test_recursion_through_self_is_a_loop() -> None:
    code = ('class Tree:\n    def depth(self, node):\n        """O(1)."""\n'
            '        return 1 + self.depth(node.left) if node else 0\n')
    assert "recursive call at m.py:4" in penalty(score_files([SourceFile("m.py", code)]), "claims").message


def test_allow_loops_lets_the_claim_stand() -> None:
    code = 'def f():\n    """O(1): the loop has 3 turns."""\n    for _ in range(3):\n        pass\n'
    assert score_files([SourceFile("m.py", code)], Policy(claims=ClaimRules(allow_loops=True))).total == 0
    assert check(score_files([SourceFile("m.py", code)]), "claims").status == "failed"


def test_an_honest_o1_function_passes() -> None:
    code = 'def is_even(n: int) -> bool:\n    """O(1)."""\n    return n % 2 == 0\n'
    assert score_files([SourceFile("m.py", code)]).total == 0
