"""The parse check: every gated Python file must parse.

Python goes through `ast.parse` with the policy's target version (`python: "3.9"` rejects a `match`
statement), in the gate's own process: nothing runs, so the check is static and `gate publish` recomputes it.
Other languages are the compile check's (gate/checks/compile.py), which runs their compilers in the sandbox.

The parse check produces the Python trees for the later checks, so that they never parse the code a second
time; a tree the extract check already built for the same version is reused (gate/checks/trees.py).
"""

from __future__ import annotations

import ast

from gate.checks.base import Analysis, Check, CheckContext, CheckResult, Product
from gate.checks.trees import feature_version
from gate.policy.keys import Charge
from gate.policy.model import Policy
from gate.subject import SourceFile
from gate.verdict import Location, Penalty, listing

# The points this check charges: keys of the policy's `points:` (gate/policy/keys.py's `Charge`).
PARSE = Charge(
    "parse", 5,
    "a gated file or block does not parse (once)",
    per="once",
    catches="a gated file or the reply's block that does not parse: `ast.parse` with `python:` as the target version "
            '(a `match` statement fails under `python: "3.9"`), other languages through the command `languages:` maps '
            "to their extension (the compile check, run in the sandbox, charging these points too, and only when the "
            "Python parses: a change pays them once); reported as `path:line:column`")


class Parse(Check):
    """`ast.parse` for Python; other languages are the compile check's."""

    name = "parse"
    # Per file, past an extract failure: a file extract charged as a chat reply is left to it. The code is
    # whole when extract left no chat in a file and every file parses.
    needs: tuple[Product, ...] = ("files",)
    produces: tuple[Product, ...] = ("trees", "code")
    static = True
    charges: tuple[Charge, ...] = (PARSE,)

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        trees: dict[str, ast.Module] = {}
        made = Analysis(trees=trees)
        failures: list[tuple[str, Location]] = []
        conversations = set(ctx.analysis.conversations or ())
        for source in ctx.files:
            if source.path in conversations:
                continue
            if _is_python(source):
                tree, failure = _parse_python(ctx, source, ctx.policy.python)
                if tree is not None:
                    trees[source.path] = tree
                if failure:
                    failures.append(failure)
        if not failures:
            return CheckResult(made=made if conversations else Analysis(trees=trees, code=ctx.files))
        return CheckResult(penalties=(not_parsing(self.name, ctx.policy, failures),), made=made)


def not_parsing(check: str, policy: Policy, failures: list[tuple[str, Location]]) -> Penalty:
    """The one penalty (`points.parse`) for the files that do not parse, each with its place and reason."""
    places = listing([f"{loc}: {text}" for text, loc in failures])
    message = f"{len(failures)} files do not parse: {places}" if len(failures) > 1 else f"does not parse: {places}"
    return Penalty(check, policy.points[PARSE], message, tuple(loc for _, loc in failures))


def tree_coverage(ctx: CheckContext) -> tuple[str, str]:
    """For a check that reads the trees (imports, claims): (why it is skipped, what it did not read). The checks
    work per file: a file that does not parse leaves the others' checks to run; only when no Python file under
    score has a tree is there nothing to check."""
    trees = ctx.analysis.trees or {}
    missing = [source.path for source in ctx.files if _is_python(source) and source.path not in trees]
    if missing and not trees:
        return "parse failed", ""
    if not missing:
        return "", ""
    return "", f"not read: {listing(missing, ', ')} (does not parse)"


def _is_python(source: SourceFile) -> bool:
    return source.status == "extracted" or source.path.endswith((".py", ".pyi"))


def _parse_python(ctx: CheckContext, source: SourceFile,
                  python: str) -> tuple[ast.Module | None, tuple[str, Location] | None]:
    if source.undecodable:  # Python refuses the file's bytes before it parses anything
        message, line = source.undecodable
        return None, (f"{message} (Python {python})", Location(source.path, line))
    try:
        tree = ctx.trees.parse(source, feature_version(python), ctx.policy)
    except SyntaxError as exc:
        message = f"{exc.msg} (Python {python})"
        return None, (message, Location(source.path, exc.lineno or None, exc.offset))
    except ValueError as exc:  # source with NUL bytes, or too large to parse here (trees.Unparsable)
        return None, (str(exc), Location(source.path))
    except (RecursionError, MemoryError):
        return None, ("nested too deeply for the parser", Location(source.path))
    return tree, None


CHECK = Parse()
