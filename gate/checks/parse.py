"""The parse check: every gated file must parse.

Python goes through `ast.parse` with the policy's target version (`python: "3.9"` rejects a `match`
statement). Other languages go through the compiler command the policy maps to their extension, run on a copy
of the file in a private temporary directory, with a timeout that kills the compiler's whole process group.
A compiler that is not installed skips that language with a note; it is not a failure of the code. A file
whose extension is neither Python nor listed under `languages` is not parsed.

The parsed Python trees go into `ctx.state["ast"]` so that later checks never parse the code a second time;
a tree the extract check already built for the same version is reused (gate/checks/trees.py).
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import signal
import subprocess
import tempfile
from pathlib import Path, PurePosixPath

from gate.checks import register
from gate.checks.base import CheckContext, CheckResult
from gate.checks.trees import parse_python
from gate.policy.model import Language, Policy
from gate.subject import SourceFile
from gate.verdict import Location, Note, Penalty, listing

AST_STATE = "ast"


class Parse:
    """`ast.parse` for Python, the policy's compiler command for other languages."""

    name = "parse"
    requires: tuple[str, ...] = ("extract",)

    def enabled(self, policy: Policy) -> bool:
        return True

    def run(self, ctx: CheckContext) -> CheckResult:
        trees: dict[str, ast.Module] = {}
        ctx.state[AST_STATE] = trees
        failures: list[tuple[str, Location]] = []
        notes: list[Note] = []
        checked = 0
        for source in ctx.files:
            if _is_python(source):
                checked += 1
                tree, failure = _parse_python(ctx, source, ctx.policy.python)
                if tree is not None:
                    trees[source.path] = tree
                if failure:
                    failures.append(failure)
                continue
            language = _language_for(source.path, ctx.policy)
            if language is None:
                continue
            failure, skipped = _compile(source, language)
            if skipped:
                notes.append(Note(self.name, skipped, (Location(source.path),)))
                continue
            checked += 1
            if failure:
                failures.append(failure)
        if not checked and notes:
            return CheckResult(skipped="no compiler for the gated files' languages", notes=tuple(notes))
        if not failures:
            return CheckResult(notes=tuple(notes))
        message = listing([f"{loc}: {text}" for text, loc in failures])
        if len(failures) > 1:
            message = f"{len(failures)} files do not parse: {message}"
        else:
            message = f"does not parse: {message}"
        penalty = Penalty(self.name, ctx.policy.points.parse, message, tuple(loc for _, loc in failures))
        return CheckResult(penalties=(penalty,), notes=tuple(notes))


def parsed_trees(ctx: CheckContext) -> dict[str, ast.Module]:
    """The Python trees the parse check left for the later checks, by path (empty before it ran)."""
    trees: dict[str, ast.Module] = ctx.state.get(AST_STATE, {})  # type: ignore[assignment]
    return trees


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
        tree = parse_python(ctx, source, _feature_version(python))
    except SyntaxError as exc:
        message = f"{exc.msg} (Python {python})"
        return None, (message, Location(source.path, exc.lineno or None, exc.offset))
    except ValueError as exc:  # source with NUL bytes
        return None, (str(exc), Location(source.path))
    except (RecursionError, MemoryError):
        return None, ("nested too deeply for the parser", Location(source.path))
    return tree, None


def _compile(source: SourceFile, language: Language) -> tuple[tuple[str, Location] | None, str]:
    """Run the language's checker on a private copy; returns (failure, skipped reason)."""
    with tempfile.TemporaryDirectory(prefix="gate-parse-") as tmp:
        copy = Path(tmp) / PurePosixPath(source.path).name
        copy.write_text(source.text, encoding="utf-8")
        argv = [arg.replace("{path}", str(copy)) for arg in language.command]
        # Only PATH: a compiler has no business with the gate's tokens.
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": tmp, "LC_ALL": "C"}
        try:
            proc = subprocess.Popen(argv, cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except FileNotFoundError:
            return None, f"{language.extension} files not parsed: `{argv[0]}` is not installed"
        except PermissionError:
            return None, f"{language.extension} files not parsed: `{argv[0]}` cannot be run"
        try:
            output, _ = proc.communicate(timeout=language.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return (f"`{argv[0]}` did not finish within {language.timeout:g} s", Location(source.path)), ""
        if proc.returncode == 0:
            return None, ""
        text = output.decode("utf-8", "replace").replace(str(copy), source.path)
        return _compiler_failure(text, source.path, argv[0], proc.returncode), ""


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the compiler and everything it started (it leads its own session), then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


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



register(Parse())
