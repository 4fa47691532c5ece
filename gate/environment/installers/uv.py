"""uv (`uv venv`, `uv pip install`), told the user's pip configuration (gate/environment/pip_config.py) and
nothing else: no uv.toml (`--no-config`: neither the user's nor the base's), no `UV_*` variable, no
`[tool.uv.sources]` of the base (`--no-sources`), so that it installs what pip would: every index considered
for every package, the best version found wins (`--index-strategy unsafe-best-match`, pip's way: uv's own
default stops at the first index that has the package), bytecode compiled as pip compiles it. Its cache is a
folder of the gate's own cache, which only root or the gate's user can change (gate/environment/cache.py), not
the home's, which another step of the job could have filled: the environment's files are hard links into it
where the filesystem allows, and it is read-only to the runs as they are."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from gate.environment import pip_config
from gate.environment.installers.command import run, tail
from gate.errors import GateFailure

# uv's words for a requirement it could not satisfy.
_UNSATISFIED = re.compile(r"Because (?:there is no version of |only )?([A-Za-z0-9][A-Za-z0-9._-]*)"
                          r"|Failed to (?:build|download|fetch):? `([^`\s]+)")


class Uv:
    name = "uv"

    def __init__(self, path: str, settings: Mapping[str, pip_config.Setting], environ: Mapping[str, str],
                 cache: Path) -> None:
        self.path = path
        self.carried = pip_config.for_uv(settings, environ)
        self.common = ("--no-config", "--no-python-downloads", "--no-progress", "--cache-dir", str(cache))

    def describe(self) -> str:
        done = subprocess.run([self.path, "--version"], capture_output=True, text=True, check=False, timeout=60)
        version = done.stdout.partition(" (")[0].strip() or "uv"  # "uv 0.13.9"
        said = f"the repository's environment is built by {version} ({self.path})"
        said += "; pip's settings carried over: " + (", ".join(self.carried.carried) or "none")
        if self.carried.not_carried:
            said += "; not carried over: " + "; ".join(self.carried.not_carried)
        return said

    def venv(self, interpreter: str, target: Path, environ: Mapping[str, str]) -> None:
        done = subprocess.run([self.path, "venv", *self.common, "--quiet", "--python", interpreter, str(target)],
                              capture_output=True, text=True, check=False, timeout=300, env=self._environment(environ))
        if done.returncode != 0:
            raise GateFailure(f"could not make a virtual environment with {interpreter} (uv): "
                              + tail(done.stdout + done.stderr))

    def install(self, python: str, args: Sequence[str], cwd: Path, environ: Mapping[str, str], what: str) -> None:
        command = [self.path, "pip", "install", *self.common, "--python", python, "--no-sources",
                   "--index-strategy", "unsafe-best-match", "--link-mode", "hardlink", "--compile-bytecode",
                   *self.carried.arguments, *args]
        run(command, cwd, self._environment(environ), what, "uv", _UNSATISFIED)

    def uninstall(self, python: str, names: Sequence[str], cwd: Path, environ: Mapping[str, str], what: str
                  ) -> None:
        run([self.path, "pip", "uninstall", *self.common, "--python", python, *names], cwd, self._environment(environ),
            what, "uv", _UNSATISFIED)

    def _environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        kept = {name: value for name, value in environ.items() if not name.startswith("UV_")}
        if "PATH" not in kept:
            kept["PATH"] = "/usr/bin:/bin"
        return {**kept, **dict(self.carried.environment)}
