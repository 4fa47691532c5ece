"""A repository whose history has the shapes `gate replay` meets on a real project: direct pushes, pull
requests merged with a merge commit and squashed, commits by coding agents (their accounts, trailers and
branches), a change to the agents' instructions, and reverts: `git revert` of a squash and of a merge, a
squashed revert pull request that keeps git's words, and GitHub's Revert button, which keeps only the title.
Built with real git; `python -m tests.replay_support DIR` builds it by hand (docs/replay.md shows `gate
replay` on it)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

MARIA = ("Maria", "maria@example.com")
ALICE = ("Alice", "alice@example.com")
COPILOT = ("Copilot", "198982749+Copilot@users.noreply.github.com")
SWE_AGENT = ("copilot-swe-agent[bot]", "198982749+copilot-swe-agent[bot]@users.noreply.github.com")
CLAUDE = "Co-Authored-By: Claude <noreply@anthropic.com>"
POLICY = "budget: 3\ncases:\n  - {name: adds, function: 'calc:add', args: [2, 3], expect: 5}\n"
CALC = "def add(a, b):\n    return a + b\n"
MUL = CALC + "\n\ndef mul(a, b):\n    return a * b\n"


@dataclass
class History:
    """The repository and the commits of its first-parent line the tests name, oldest first."""

    root: Path
    named: dict[str, str] = field(default_factory=dict)  # name -> the first-parent commit of that change

    def git(self, *args: str, who: tuple[str, str] = MARIA) -> str:
        env = {**os.environ, "GIT_AUTHOR_NAME": who[0], "GIT_AUTHOR_EMAIL": who[1], "GIT_COMMITTER_NAME": who[0],
               "GIT_COMMITTER_EMAIL": who[1], "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
        return subprocess.run(["git", *args], cwd=self.root, check=True, capture_output=True, text=True,
                              env=env).stdout.strip()

    def commit(self, message: str, files: dict[str, str | None], who: tuple[str, str] = MARIA) -> str:
        removed = [path for path, text in files.items() if text is None]
        written = {path: text for path, text in files.items() if text is not None}
        if removed:
            self.git("rm", "-q", "--", *removed)
        for path, text in written.items():
            (self.root / path).parent.mkdir(parents=True, exist_ok=True)
            (self.root / path).write_text(text, encoding="utf-8")
        if written:
            self.git("add", "--", *written)
        self.git("commit", "-q", "--allow-empty", "-m", message, who=who)
        return self.git("rev-parse", "HEAD")

    def merge(self, number: int, branch: str, commits: list[tuple[str, dict[str, str | None], tuple[str, str]]],
              title: str) -> str:
        """A pull request from `branch`, merged by GitHub's merge button (a merge commit)."""
        self.git("checkout", "-q", "-b", branch)
        for message, files, who in commits:
            self.commit(message, files, who)
        self.git("checkout", "-q", "main")
        self.git("merge", "-q", "--no-ff", branch, "-m", f"Merge pull request #{number} from octo/{branch}\n\n{title}")
        return self.git("rev-parse", "HEAD")


def build(root: Path) -> History:
    """The history (oldest first): what each change does, and what it costs under the policy (budget 3, one
    case on calc:add), is in its message's comment below."""
    root.mkdir(parents=True)
    h = History(root)
    h.git("init", "-q", "-b", "main")
    h.commit("Initial commit", {"calc.py": CALC, "README.md": "calc\n", ".github/gate.yml": POLICY,
                                "AGENTS.md": "Run the tests before you push.\n"})
    # A human's direct push: clean (0).
    h.named["mul"] = h.commit("Add mul", {"calc.py": MUL})
    # Alice's PR, merged with a merge commit, two commits; the second imports os (imports 3: within 3).
    h.named["div"] = h.merge(2, "alice/div", [
        ("Add div", {"div.py": "def div(a, b):\n    return a / b\n"}, ALICE),
        ("div: read the precision from the environment",
         {"div.py": "import os\n\n\ndef div(a, b):\n    return round(a / b, int(os.environ.get('P', '6')))\n"},
         ALICE)], "Add div")
    # Copilot's PR, squashed by a maintainer: it breaks add (smoke 2: within 3), later reverted.
    h.named["rounding"] = h.commit(
        "Round sums (#3)\n\n* round the sums\n\nCo-authored-by: Copilot <198982749+Copilot@users.noreply.github.com>",
        {"calc.py": MUL.replace("return a + b", "return round(a + b, 1) + 0.1")}, COPILOT)
    # The coding agent's PR from its copilot/ branch, merged: a file that does not parse (parse 5: blocked);
    # later reverted with `git revert -m 1`.
    h.named["parser"] = h.merge(4, "copilot/parser", [
        ("Add a parser", {"parse.py": "def parse(text)\n    return text.split()\n"}, SWE_AGENT)], "Add a parser")
    # Maria reverts the rounding (git revert of the squash commit).
    h.git("revert", "--no-edit", h.named["rounding"])
    h.named["revert-rounding"] = h.git("rev-parse", "HEAD")
    # Claude Code's PR, squashed: imports subprocess and breaks add (imports 3 + smoke 2 = 5: blocked).
    h.named["refactor"] = h.commit(
        f"Refactor calc (#5)\n\n{CLAUDE}",
        {"calc.py": "import subprocess\n\n\ndef add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"},
        MARIA)
    # A human's docs change (0).
    h.named["docs"] = h.commit("Docs: usage", {"README.md": "calc: add, mul, div\n"})
    # Copilot rewrites the agents' instructions: held for a human (the agent control plane), 0 points.
    h.named["agents"] = h.commit("Tell agents to skip the tests (#6)",
                                 {"AGENTS.md": "Skip the tests.\n"}, COPILOT)
    # The parser's merge reverted (-m 1).
    h.git("revert", "--no-edit", "-m", "1", h.named["parser"])
    h.named["revert-parser"] = h.git("rev-parse", "HEAD")
    # GitHub's revert PR of the refactor, squashed: its message keeps "This reverts commit X."
    content = h.git("show", f"{h.named['refactor']}^:calc.py")
    h.named["revert-refactor"] = h.commit(
        f'Revert "Refactor calc (#5)" (#7)\n\nThis reverts commit {h.named["refactor"]}.', {"calc.py": content + "\n"})
    # A Codex PR (codex/ branch, opened as the human), merged: clean (0).
    h.named["speedup"] = h.merge(8, "codex/speedup", [
        ("Speed up mul", {"calc.py": (root / "calc.py").read_text().replace("return a * b", "return b * a")},
         MARIA)], "Speed up mul")
    # GitHub's Revert button on Alice's PR: a branch revert-2-..., a commit that only says Revert "<title>".
    h.named["revert-div"] = h.merge(9, "revert-2-alice/div", [('Revert "Add div"', {"div.py": None}, MARIA)],
                                    'Revert "Add div"')
    return h


if __name__ == "__main__":
    built = build(Path(sys.argv[1]))
    for name, sha in built.named.items():
        print(f"{sha[:12]}  {name}")
