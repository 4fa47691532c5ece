"""Each command's `--help` epilog: examples, the exit codes, and for `gate ci` the variables it reads. Kept
here, beside one another, so that every command says its exit codes the same way (docs/cli.md lists them)."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

GATING = ("exit codes: 0 accepted (or not gated), 1 blocked, 2 bad input (file, line and key), 3 the gate could "
          "not do its job")
PRINTING = "exit codes: 0 done, 2 bad input (file, line and key), 3 the gate could not do its job"
EPILOGS = {
    "init": "",  # its own (gate/commands/init.py)
    "score": ("examples:\n"
              "  gate score examples/sum-two-numbers/reply.md --task examples/sum-two-numbers/task.yml\n"
              "  gate score reply.md --task task.yml --policy .github/gate.yml --json -\n\n" + GATING),
    "check": ("examples:\n"
              "  gate check                              # the current branch against main (or master)\n"
              "  gate check --base origin/main --head HEAD --json verdict.json\n"
              "  gate check --comment comment.md          # the PR comment as Markdown\n\n" + GATING),
    "replay": ("examples:\n"
               "  gate replay main -n 50                  # the last 50 changes of main, each under its base's policy\n"
               "  gate replay main -n 50 --policy candidate.yml --json replay.json\n"
               "  gate replay main --bots-only            # only the changes the policy gates\n\n"
               "exit codes: 0 done (a change that could not be scored is a row that says why), 2 bad input (a "
               "branch, N, a policy file: file, line and key), 3 the gate could not do its job for a change, 130 "
               "interrupted (what was scored is printed and written)"),
    "ci": "",  # built when `gate ci` is registered: _ci_epilog()
    "publish": ("examples (in the workflow_run workflow of the README):\n"
                "  gate publish \"$RUNNER_TEMP/artifact/gate-verdict.json\"\n\n"
                "reads: the variables gate ci reads (gate ci --help)\n\n"
                "exit codes: 0 accepted (or not gated), 1 blocked, 2 artifact refused or bad input, 3 the gate "
                "could not do its job"),
    "eval": ("examples:\n"
             "  gate eval --dataset humaneval --samples samples.jsonl -k 1,10 --out rows.jsonl --json summary.json\n"
             "  gate eval --dataset mbpp --data ../shared/data/mbpp/mbpp.jsonl --samples samples.jsonl\n"
             "  gate eval --dataset tasks.jsonl --samples samples.jsonl --shard 1/4 --out rows-1.jsonl\n\n"
             + PRINTING),
    "diff": ("examples:\n  gate diff old-rows.jsonl new-rows.jsonl\n\n"
             "exit codes: 0 no sample regressed, 1 a sample that passed in OLD fails in NEW, 2 bad input, 3 the "
             "gate could not do its job"),
    "merge": ("examples:\n  gate merge rows-1.jsonl rows-2.jsonl rows-3.jsonl rows-4.jsonl --json summary.json\n\n"
              + PRINTING),
    "policy": ("examples:\n"
               "  gate policy check                      # .github/gate.yml\n"
               "  gate policy show ci/gate.yml           # after extends:, every key\n"
               "  gate policy schema > .github/gate.schema.json\n\n"
               "exit codes: 0 valid (or printed), 2 the first error (file, line and key), 3 the gate could not do "
               "its job"),
    "doctor": ("examples:\n  sudo gate doctor                # as root, as the Action runs the gate\n"
               "  sudo gate doctor --repo .       # and this repository's suite, as the gate would run it\n\n"
               "exit codes: 0 every canary was blocked (and the suite ran), 2 the policy's environment: names "
               "what the repository lacks (a dependency group), 3 a canary was not blocked, or the gate could "
               "not do its job"),
}


def _ci_epilog() -> str:
    from gate.github.client import WAIT_VARIABLES  # (PyGithub: imported only when `gate ci` is registered)

    return ("examples (a workflow step; the Action runs it for you):\n"
            "  gate ci --comment on-change --check-name gate\n\n"
            "reads:\n  GITHUB_EVENT_NAME, GITHUB_EVENT_PATH (the event: its PR), GITHUB_REPOSITORY, GITHUB_TOKEN,\n"
            "  GITHUB_API_URL (GitHub Enterprise Server: https://HOST/api/v3), GITHUB_WORKSPACE (the checkout),\n"
            "  GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP (the verdict file), RUNNER_TOOL_CACHE and\n"
            "  GATE_CACHE_DIR (the environments' cache), GATE_HIDDEN_CASES (a hidden-cases file),\n"
            f"  {', '.join(WAIT_VARIABLES.values())} (retries and waits)\n\n" + GATING)


class HelpFormatter(argparse.HelpFormatter):
    """Wraps descriptions as argparse does, but keeps indented lines (examples, lists) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(line if line.startswith(" ") else textwrap.fill(line, width, initial_indent=indent,
                                                                        subsequent_indent=indent)
                         for line in text.splitlines())


def add_epilogs(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Give each registered command (and each action of `gate policy`) its epilog and the formatter."""
    for name, parser in subparsers.choices.items():
        parser.formatter_class = HelpFormatter
        epilog = _ci_epilog() if name == "ci" else EPILOGS.get(name, "")
        if epilog:
            parser.epilog = epilog
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    child.formatter_class = HelpFormatter
                    child.epilog = parser.epilog
