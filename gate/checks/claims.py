"""The claims check: a function claimed O(1) must not loop.

A claim is "O(1)" or "constant time" in the function's docstring, in a comment on its `def` line (or its
decorators and signature) or in the comment block right above it, or in the reply's prose outside the code
block when that prose names the function (or the code defines only one function). Space claims ("O(1) space",
"memory: O(1)"), amortized claims and negated ones ("not O(1)") are not time claims and are left alone.

A loop is `for`, `while`, a comprehension or generator expression, a call of the function itself (recursion,
also `self.f(...)`), or a call of a builtin that walks its one iterable argument: `sum`, `sorted`, `min`,
`max`, `any`, `all` (but not `max(a, b)`, and not over a literal of fixed size). Membership (`x in y`) is not
counted: on a set or dict, the usual reason to claim O(1), it is constant, and the type of `y` is not known
statically. A loop over a fixed constant is a false positive, which `claims.allow_loops` is for. Complexity is
judged from the code, never from a timing sample.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

import msgspec

from gate.checks.base import Check, CheckContext, CheckResult, Product
from gate.checks.parse import tree_coverage
from gate.fences import prose_lines
from gate.policy.keys import Charge
from gate.policy.model import Policy
from gate.subject import SourceFile
from gate.verdict import Location, Penalty, listing

_CLAIM = re.compile(r"\b[Oo]\s*\(\s*1\s*\)|\bconstant[- ]time\b", re.IGNORECASE)
_SPACE_AFTER = re.compile(r"\s*(?:(?:extra|auxiliary|additional)\s+)?(?:space|memory)\b", re.IGNORECASE)
_NOT_TIME_BEFORE = re.compile(
    r"(?:(?:space|memory)(?:\s+complexity)?\s*(?:is|:|of|=|-)?\s*(?:only\s+|just\s+)?"
    r"|amortized\s+|amortised\s+|(?:not|isn't|never)\s+(?:an?\s+)?)$",
    re.IGNORECASE,
)
_LINEAR_BUILTINS = frozenset({"sum", "sorted", "min", "max", "any", "all"})
_Function = ast.FunctionDef | ast.AsyncFunctionDef


class Claim(msgspec.Struct, frozen=True):
    where: Location
    text: str


def find_claim(text: str) -> int | None:
    """The offset of the first time-complexity claim of O(1) in `text`, or None."""
    for match in _CLAIM.finditer(text):
        before = text[max(0, match.start() - 40):match.start()]
        if _SPACE_AFTER.match(text, match.end()) or _NOT_TIME_BEFORE.search(before):
            continue
        return match.start()
    return None


# The points this check charges: keys of the policy's `points:` (gate/policy/keys.py's `Charge`).
CLAIMS = Charge(
    "claims", 3,
    "an O(1) claim on a function that loops (once)",
    per="once",
    catches='"O(1)" or "constant time" in a function\'s docstring, in a comment on or above its `def`, or in the '
            "reply's prose naming it, when its body loops: `for`, `while`, a comprehension, recursion, or "
            '`sum`/`sorted`/`min`/`max`/`any`/`all` over an iterable. Space ("O(1) space"), amortized and negated '
            "claims are not time claims; `x in y` is not counted (constant on a set or dict). `claims.allow_loops: "
            "true` turns it off. Both lines are reported")


class Claims(Check):
    """An O(1) claim contradicted by a loop in the function's body."""

    name = "claims"
    # Per file: a file that does not parse leaves the others to check (parse.tree_coverage).
    needs: tuple[Product, ...] = ("trees",)
    produces: tuple[Product, ...] = ()
    static = True
    charges: tuple[Charge, ...] = (CLAIMS,)

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.policy.claims.allow_loops:
            return CheckResult()
        skipped, not_read = tree_coverage(ctx)
        if skipped:
            return CheckResult(skipped=skipped)
        trees = ctx.analysis.trees or {}
        findings: list[tuple[str, Location, Location]] = []
        for source in ctx.files:
            tree = trees.get(source.path)
            if tree is None:
                continue
            functions = [n for n in ctx.trees.walk(source.path, tree) if isinstance(n, _Function)]
            if not functions:
                continue
            prose = _prose_claims(ctx, source, functions)
            comments = _comments(source.text)
            for function in functions:
                claim = _docstring_claim(function, source.path) or _comment_claim(function, comments, source)
                claim = claim or prose.get(function.name)
                loop = _first_loop(function) if claim else None
                if claim and loop:
                    kind, line = loop
                    message = (f"{function.name}() claims {claim.text} at {claim.where} "
                               f"but has a {kind} at {source.path}:{line}")
                    findings.append((message, claim.where, Location(source.path, line)))
        if not findings:
            return CheckResult(reason=not_read)
        message = listing([text for text, _, _ in findings])
        locations = tuple(loc for _, claim, loop in findings for loc in (claim, loop))
        return CheckResult(penalties=(Penalty(self.name, ctx.policy.points[CLAIMS], message, locations),),
                           reason=not_read)


def _docstring_claim(function: _Function, path: str) -> Claim | None:
    docstring = ast.get_docstring(function, clean=False)
    if not docstring:
        return None
    offset = find_claim(docstring)
    if offset is None:
        return None
    line = function.body[0].lineno + docstring[:offset].count("\n")
    return Claim(Location(path, line), _claim_text(docstring, offset))


def _comments(text: str) -> dict[int, tuple[str, bool]]:
    """Comments by line: (text, whether the comment is alone on its line). Only comments that may hold a
    claim matter, and a comment is the text itself from `#` to the end of its line: without a claim anywhere
    in the text there is none in a comment, and the tokenizer (most of this check's time) is not needed."""
    comments: dict[int, tuple[str, bool]] = {}
    if not _CLAIM.search(text):
        return comments
    lines = text.splitlines()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                row, col = token.start
                alone = row <= len(lines) and not lines[row - 1][:col].strip()
                comments[row] = (token.string, alone)
    except (tokenize.TokenError, SyntaxError):
        pass  # the file parsed, so this is only a tokenizer corner case; docstrings still count
    return comments


def _comment_claim(function: _Function, comments: dict[int, tuple[str, bool]],
                   source: SourceFile) -> Claim | None:
    first = min([function.lineno, *(d.lineno for d in function.decorator_list)])
    header = range(first, function.body[0].lineno)
    lines = list(header)
    above = first - 1
    while above in comments and comments[above][1]:
        lines.append(above)
        above -= 1
    for line in sorted(lines):
        text = comments.get(line, ("", False))[0]
        offset = find_claim(text)
        if offset is not None:
            return Claim(Location(source.path, line), _claim_text(text, offset))
    return None


def _prose_claims(ctx: CheckContext, source: SourceFile, functions: list[_Function]) -> dict[str, Claim]:
    """Claims in the reply's prose, by the function they are about."""
    reply = ctx.subject.reply
    if reply is None or source.status != "extracted":
        return {}
    names = {f.name for f in functions}
    claims: dict[str, Claim] = {}
    for line, text in prose_lines(reply):
        offset = find_claim(text)
        if offset is None:
            continue
        named = {n for n in names if re.search(rf"\b{re.escape(n)}\b", text)}
        if not named and len(names) == 1:
            named = names
        for name in named:
            claims.setdefault(name, Claim(Location(ctx.subject.label, line), _claim_text(text, offset)))
    return claims


def _claim_text(text: str, offset: int) -> str:
    match = _CLAIM.match(text, offset)
    return f'"{match.group(0)}"' if match else '"O(1)"'


def _first_loop(function: _Function) -> tuple[str, int] | None:
    """The first loop in `function`'s body, as (what it is, line)."""
    loops: list[tuple[int, str]] = []
    for statement in function.body:
        for node in ast.walk(statement):
            kind = _loop_kind(node, function.name)
            if kind:
                loops.append((getattr(node, "lineno", function.lineno), kind))
    if not loops:
        return None
    line, kind = min(loops)
    return kind, line


def _loop_kind(node: ast.AST, own_name: str) -> str | None:
    if isinstance(node, ast.For | ast.AsyncFor):
        return "for loop"
    if isinstance(node, ast.While):
        return "while loop"
    if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
        return "comprehension"
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if (isinstance(func, ast.Name) and func.id == own_name) or (
            isinstance(func, ast.Attribute) and func.attr == own_name
            and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")):
        return "recursive call"
    if isinstance(func, ast.Name) and func.id in _LINEAR_BUILTINS and _walks_iterable(node):
        return f"call of {func.id}() over an iterable"
    return None


def _walks_iterable(call: ast.Call) -> bool:
    """`sum(xs)` walks `xs`; `max(a, b)` and `max((a, b))` compare a fixed number of values."""
    if len(call.args) != 1 or isinstance(call.args[0], ast.Starred):
        return False
    argument = call.args[0]
    fixed = isinstance(argument, ast.List | ast.Tuple | ast.Set) and not any(
        isinstance(e, ast.Starred) for e in argument.elts)
    return not fixed


CHECK = Claims()
