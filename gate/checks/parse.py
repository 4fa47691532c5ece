"""The parse check: every gated file must parse.

Python goes through `ast.parse` with the policy's target version (`python: "3.9"` rejects a `match`
statement). Other languages go through the compiler command the policy maps to their extension, run in the
sandbox on a copy of the file (a checker runs the head's code: `perl -c` runs its BEGIN blocks), under the
policy's limits with the language's timeout; never outside the sandbox. A compiler that is not installed
leaves that language unparsed with a note; it is not a failure of the code, and it does not stop the checks
after this one (the cases still run). A file whose extension is neither Python nor listed under `languages`
is not parsed.

The parse check produces the Python trees for the later checks, so that they never parse the code a second
time; a tree the extract check already built for the same version is reused (gate/checks/trees.py).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
from dataclasses import replace
from pathlib import Path, PurePosixPath

from gate.cases.base import shown
from gate.cases.running import sandbox_limits
from gate.checks.base import Analysis, CheckContext, CheckResult, Product
from gate.checks.trees import refusal
from gate.errors import GateFailure
from gate.policy.model import Language, Policy
from gate.sandbox.base import RunRequest
from gate.subject import SourceFile
from gate.verdict import Location, Note, Penalty, listing

# The address space a `languages:` checker gets at least: compilers reserve more than they use (node's V8
# reserves about 1 GiB for its code at start and fails under the default 512 MB).
_CHECKER_MEMORY = 2 << 30


class Parse:
    """`ast.parse` for Python, the policy's compiler command for other languages."""

    name = "parse"
    requires: tuple[str, ...] = ("extract",)
    needs: tuple[Product, ...] = ("files",)
    produces: tuple[Product, ...] = ("trees",)
    static = True

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        trees: dict[str, ast.Module] = {}
        made = Analysis(trees=trees)
        failures: list[tuple[str, Location]] = []
        notes: list[Note] = []
        for source in ctx.files:
            if _is_python(source):
                tree, failure = _parse_python(ctx, source, ctx.policy.python)
                if tree is not None:
                    trees[source.path] = tree
                if failure:
                    failures.append(failure)
                continue
            language = _language_for(source.path, ctx.policy)
            if language is None:
                continue
            too_large = refusal(source, ctx.policy)
            if too_large:
                failures.append((too_large, Location(source.path)))
                continue
            failure, skipped = _compile(ctx, source, language)
            if skipped:
                notes.append(Note(self.name, skipped, (Location(source.path),)))
                continue
            if failure:
                failures.append(failure)
        if not failures:
            return CheckResult(notes=tuple(notes), made=made)
        message = listing([f"{loc}: {text}" for text, loc in failures])
        if len(failures) > 1:
            message = f"{len(failures)} files do not parse: {message}"
        else:
            message = f"does not parse: {message}"
        penalty = Penalty(self.name, ctx.policy.points.parse, message, tuple(loc for _, loc in failures))
        return CheckResult(penalties=(penalty,), notes=tuple(notes), made=made)


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


def _language_for(path: str, policy: Policy) -> Language | None:
    suffix = PurePosixPath(path).suffix
    for language in policy.languages:
        if language.extension in (suffix, suffix.lstrip(".")):
            return language
    return None


def _feature_version(python: str) -> tuple[int, int]:
    major, minor = python.split(".")[:2]
    return int(major), int(minor)


def _parse_python(ctx: CheckContext, source: SourceFile,
                  python: str) -> tuple[ast.Module | None, tuple[str, Location] | None]:
    if source.undecodable:  # Python refuses the file's bytes before it parses anything
        message, line = source.undecodable
        return None, (f"{message} (Python {python})", Location(source.path, line))
    try:
        tree = ctx.trees.parse(source, _feature_version(python), ctx.policy)
    except SyntaxError as exc:
        message = f"{exc.msg} (Python {python})"
        return None, (message, Location(source.path, exc.lineno or None, exc.offset))
    except ValueError as exc:  # source with NUL bytes, or too large to parse here (trees.Unparsable)
        return None, (str(exc), Location(source.path))
    except (RecursionError, MemoryError):
        return None, ("nested too deeply for the parser", Location(source.path))
    return tree, None


def _compile(ctx: CheckContext, source: SourceFile,
             language: Language) -> tuple[tuple[str, Location] | None, str]:
    """Run the language's checker on the file, in the sandbox under its limits (a checker runs code of the
    head: `perl -c` runs BEGIN blocks); returns (failure, skipped reason)."""
    program = checker_program(language)
    if program is None:
        return None, f"{language.extension} files not parsed: `{language.command[0]}` is not installed"
    if ctx.sandbox is None:  # never outside it
        return None, f"{language.extension} files not parsed: no sandbox to run `{language.command[0]}` in"
    name = PurePosixPath(source.path).name
    argv = (program, *(arg.replace("{path}", name) for arg in language.command[1:]))
    base = sandbox_limits(ctx.policy.limits)
    limits = replace(base, wall_s=language.timeout, cpu_s=language.timeout,
                     memory_bytes=max(base.memory_bytes, _CHECKER_MEMORY))
    request = RunRequest(argv=argv, files={name: source.text.encode("utf-8", "surrogateescape")},
                         env={"HOME": "/tmp", "LC_ALL": "C"}, limits=limits)
    try:
        result = ctx.sandbox.run(request)
    except GateFailure as exc:  # the program could not start in the run's root
        return None, f"{language.extension} files not parsed: `{language.command[0]}` cannot run ({exc})"
    if result.timed_out or result.killed_reason in ("wall timeout", "cpu limit"):
        return (f"`{language.command[0]}` did not finish within {language.timeout:g} s", Location(source.path)), ""
    if result.exit_code == 0:
        return None, ""
    text = (result.stdout + result.stderr).decode("utf-8", "replace").replace(name, source.path)
    code = result.exit_code if result.exit_code is not None else -(result.signal or 0)
    message, location = _compiler_failure(text, source.path, language.command[0], code)
    return (shown(message), location), ""  # the checker's words are the run's, cut as a case's detail is


def checker_program(language: Language) -> str | None:
    """The checker's program on this machine (found on the gate's PATH), resolved, or None."""
    found = shutil.which(language.command[0])
    return os.path.realpath(found) if found else None


def checker_paths(policy: Policy) -> tuple[str, ...]:
    """What the `languages:` checkers need in a run's root, read-only: /usr (and /etc/alternatives, where
    Debian's links to compilers lead) for a program installed there, else the tree the program was installed
    in (the parent of its bin directory)."""
    found: list[str] = []
    for language in policy.languages:
        program = checker_program(language)
        if program is None:
            continue
        if program.startswith("/usr/"):
            found += ["/usr", *(["/etc/alternatives"] if os.path.isdir("/etc/alternatives") else [])]
        else:
            found.append(str(Path(program).parent.parent))
    return tuple(dict.fromkeys(found))


def _compiler_failure(output: str, path: str, program: str, code: int) -> tuple[str, Location]:
    """The first diagnostic that names the file (`path:line:col: message`), else the first output line."""
    pattern = re.compile(rf"{re.escape(path)}:(\d+)(?::(\d+))?:?\s*(.*)")
    for line in output.splitlines():
        found = pattern.search(line)
        if found:
            column = int(found[2]) if found[2] else None
            # node prints `file:line` alone and the error a few lines further down.
            named = next((x.strip() for x in output.splitlines() if re.match(r"\s*\w*Error\b", x)), "")
            return found[3].strip() or named or line.strip(), Location(path, int(found[1]), column)
    first = next((line.strip() for line in output.splitlines() if line.strip()), "")
    return first or f"`{program}` exited with status {code}", Location(path)



CHECK = Parse()
