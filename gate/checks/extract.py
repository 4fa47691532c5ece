"""The extract check: find the code to score, and charge when there is none or it is still a conversation.

A model reply must hold exactly one Python block (```python, ```py or a bare fence; ~~~ fences too).
Blocks tagged with another language (```bash, ```text, ```json) are not Python code: they are neither the
solution nor a competitor, so a reply may show a shell command or the program's output next to its one
solution. Bare blocks are candidates only when no block is tagged Python, because models use them both for
code and for output.

For a set of changed files (a git range, a pull request), the gated files are those matching `paths.include`
and no `paths.exclude` glob. A change that touches no gated file costs nothing here (a data, config or docs
change is not a reply without code): the note says so, and the cases and tests still run against its head. A
gated code file (Python, or an extension under `languages`) that still holds a chat reply (Markdown fences or a
model's prose lines) costs the points, with the path and line of each; those files are this check's to charge
(the parse check leaves them), and the static checks still read the other files.
"""

from __future__ import annotations

import re
import sys

from gate.checks.base import Analysis, Check, CheckContext, CheckResult, Product
from gate.checks.trees import feature_version, refusal
from gate.errors import BadInput
from gate.fences import Block, find_blocks, split_lines
from gate.globs import is_gated
from gate.policy.keys import Charge
from gate.policy.model import Policy
from gate.subject import SourceFile
from gate.verdict import Location, Note, Penalty, listing

SOLUTION_PATH = "solution.py"
# What `ast.parse` targets by default: the interpreter running the gate.
_THIS_PYTHON = (sys.version_info.major, sys.version_info.minor)

# Lines a model writes around code and a program never holds outside a string.
_CHAT_LINE = re.compile(
    r"^\s*(?:```|~~~"
    r"|(?:here is|here's|here are|below is|the following is)\b"
    r"|(?:sure|certainly|of course|absolutely)\b[,.!:]"
    r"|(?:i hope this helps|hope this helps|let me know if)\b"
    r"|(?:this|the) (?:code|function|program|script|solution|implementation) (?:above |below )?"
    r"(?:reads|prints|uses|works|defines|returns|handles|will|should|is)\b"
    r"|(?:explanation|output|usage|example usage)\s*:\s*$)",
    re.IGNORECASE,
)


# The points this check charges: keys of the policy's `points:` (gate/policy/keys.py's `Charge`).
EXTRACT = Charge(
    "extract", 5,
    "a reply with no code, or a conversation instead of code (once)",
    per="once",
    catches="a reply with no Python block, or several competing ones (the message gives their lines); a gated file "
            'that still holds a chat reply (Markdown fences, "Here is the code:") with `path:line`. A change that '
            "touches no gated file (docs, data, config) costs nothing: a note says so, and the cases and tests still "
            "run against its head, since such a change can break behaviour")


class Extract(Check):
    """Exactly one solution in a reply; only gated code, and no chat transcript, in a change."""

    name = "extract"
    needs: tuple[Product, ...] = ()  # a change's files are the subject's; a reply's are this check's to find
    produces: tuple[Product, ...] = ("files", "conversations")
    static = True
    charges: tuple[Charge, ...] = (EXTRACT,)

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        if ctx.subject.reply is not None:
            return self._from_reply(ctx, ctx.subject.reply)
        return self._from_files(ctx)

    def _from_reply(self, ctx: CheckContext, reply: str) -> CheckResult:
        where = ctx.subject.label
        blocks = find_blocks(reply)
        python = [b for b in blocks if b.is_python]
        candidates = python or [b for b in blocks if b.is_bare]
        points = ctx.policy.points[EXTRACT]
        if not candidates:
            others = [b for b in blocks if not b.is_python and not b.is_bare]
            message = "the reply holds no Python code block"
            if others:
                message += " (only " + ", ".join(f"```{b.language} at line {b.line}" for b in others) + ")"
            locations = tuple(Location(where, b.line) for b in others) or (Location(where),)
            return CheckResult(penalties=(Penalty(self.name, points, message, locations),))
        if len(candidates) > 1:
            lines = ", ".join(str(b.line) for b in candidates)
            message = (f"the reply holds {len(candidates)} competing code blocks (lines {lines}); "
                       "a patch has exactly one solution")
            locations = tuple(Location(where, b.line) for b in candidates)
            return CheckResult(penalties=(Penalty(self.name, points, message, locations),))
        block = candidates[0]
        solution = SourceFile(SOLUTION_PATH, block.code, None, "extracted")
        return CheckResult(notes=_unclosed_note(block, where), made=Analysis(files=(solution,)))

    def _from_files(self, ctx: CheckContext) -> CheckResult:
        paths = ctx.policy.paths
        try:
            gated = tuple(f for f in ctx.files if is_gated(f.path, paths.include, paths.exclude))
        except ValueError as exc:  # the loader validates globs; this guards policies built another way
            raise BadInput(str(exc), file=ctx.policy.source, key="paths") from None
        made = Analysis(files=gated, conversations=())
        points = ctx.policy.points[EXTRACT]
        if not gated:
            return CheckResult(notes=(Note(self.name, _nothing_gated(ctx)),), reason="no gated file changed",
                               made=made)
        code_suffixes = (".py", *(_suffix(lang.extension) for lang in ctx.policy.languages))
        found = [loc for f in gated if f.path.endswith(code_suffixes) for loc in _chat_lines(ctx, f)]
        if not found:
            return CheckResult(made=made)
        made = Analysis(files=gated, conversations=tuple(dict.fromkeys(loc.path for loc in found)))
        listed = listing([str(loc) for loc in found], ", ")
        message = f"a gated file still holds a chat reply (Markdown fences or prose) at {listed}"
        return CheckResult(penalties=(Penalty(self.name, points, message, tuple(found)),), made=made)


def _nothing_gated(ctx: CheckContext) -> str:
    paths = ctx.policy.paths
    if not ctx.subject.files:
        return "no changed file to check here; the cases and tests run against the head"
    globs = f"paths.include ({', '.join(paths.include)})" + (
        f" minus paths.exclude ({', '.join(paths.exclude)})" if paths.exclude else "")
    return (f"none of the {len(ctx.subject.files)} changed files matches {globs}: no code to check, and the "
            "cases and tests run against the head")


def _suffix(extension: str) -> str:
    return extension if extension.startswith(".") else "." + extension


def _chat_lines(ctx: CheckContext, source: SourceFile) -> list[Location]:
    """Lines of a code file that look like a chat reply. Only code files are scanned (a gated README may hold
    fences), and a Python file that parses has none: outside strings and comments, a fence or a sentence is
    not valid Python, so only a file that does not parse is scanned."""
    if refusal(source, ctx.policy) or (source.path.endswith(".py") and _parses(ctx, source)):
        return []  # a file too large to parse is the parse check's to charge
    return [Location(source.path, n) for n, line in enumerate(split_lines(source.text), start=1)
            if _CHAT_LINE.match(line)]


def _parses(ctx: CheckContext, source: SourceFile) -> bool:
    """Whether the file parses as this interpreter's Python. It is parsed as the policy's version first, when
    that is not newer, and the parse check reuses that tree: a file that parses there parses here too (a
    feature version only takes newer syntax away), so a file of a big change is parsed once, not twice."""
    target = feature_version(ctx.policy.python)
    for version in dict.fromkeys((target, _THIS_PYTHON) if target <= _THIS_PYTHON else (_THIS_PYTHON,)):
        try:
            ctx.trees.parse(source, version, ctx.policy)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        return True
    return False


def _unclosed_note(block: Block, where: str) -> tuple[Note, ...]:
    if block.closed:
        return ()
    message = "the code block is never closed: the reply may be cut off"
    return (Note("extract", message, (Location(where, block.line),)),)


CHECK = Extract()
