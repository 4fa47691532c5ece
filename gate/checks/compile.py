"""The compile check: files of the languages the policy maps to a compiler (`languages:`) must compile.

The compiler command runs in the sandbox on a copy of the file (a checker runs the head's code: `perl -c` runs
its BEGIN blocks), under the policy's limits with the language's timeout; never outside the sandbox. So the
check is not static: `gate publish`, which runs nothing of the head, takes its findings from the artifact
only against the PR. A compiler that is not installed leaves that language unchecked with a note; it is not a
failure of the code, and it does not stop the checks after this one (the cases still run). A file whose
extension is neither Python (the parse check's) nor listed under `languages` is not checked.

It charges `points.parse`, and only when the parse check passed: a change whose files do not parse pays once.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path, PurePosixPath

from msgspec.structs import replace

from gate.cases.base import shown
from gate.checks.base import Check, CheckContext, CheckResult, Product
from gate.checks.parse import not_parsing
from gate.checks.trees import refusal
from gate.errors import GateFailure
from gate.limits import sandbox_limits
from gate.policy.keys import Charge
from gate.policy.model import Language, Policy
from gate.sandbox.base import RunRequest
from gate.subject import SourceFile, Subject
from gate.verdict import Location, Note

# The address space a `languages:` checker gets at least: compilers reserve more than they use (node's V8
# reserves about 1 GiB for its code at start and fails under the default 512 MB).
_CHECKER_MEMORY = 2 << 30


class Compile(Check):
    """The policy's compiler command for each file of another language than Python."""

    name = "compile"
    needs: tuple[Product, ...] = ("code",)
    produces: tuple[Product, ...] = ()
    static = False
    charges: tuple[Charge, ...] = ()  # it charges the parse check's points

    def enabled(self, policy: Policy) -> bool:
        return bool(policy.languages)

    def sandbox_paths(self, subject: Subject, policy: Policy) -> tuple[str, ...] | None:
        """A changed file `languages:` maps to a checker installed here runs it in the sandbox, which then
        holds what the checkers need of the host (`checker_paths`)."""
        if not any(language_for(source.path, policy) for source in subject.files):
            return None
        return checker_paths(policy) or None

    def hash_seeds(self, policy: Policy) -> tuple[int, ...]:
        return (0,)  # (each checker runs once, under 0)

    def run(self, ctx: CheckContext) -> CheckResult:
        failures: list[tuple[str, Location]] = []
        notes: list[Note] = []
        for source in ctx.code:
            language = language_for(source.path, ctx.policy)
            if language is None:
                continue
            too_large = refusal(source, ctx.policy)
            if too_large:
                failures.append((too_large, Location(source.path)))
                continue
            failure, skipped = _compile(ctx, source, language)
            if skipped:
                notes.append(Note(self.name, skipped, (Location(source.path),)))
            elif failure:
                failures.append(failure)
        penalties = (not_parsing(self.name, ctx.policy, failures),) if failures else ()
        return CheckResult(penalties=penalties, notes=tuple(notes))


def language_for(path: str, policy: Policy) -> Language | None:
    """The `languages:` entry for `path`'s extension, if any."""
    suffix = PurePosixPath(path).suffix
    for language in policy.languages:
        if language.extension in (suffix, suffix.lstrip(".")):
            return language
    return None


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


CHECK = Compile()
