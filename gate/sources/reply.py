"""A model reply and its task as something to score: `gate score REPLY.md --task TASK.yml`.

There is no base commit here: the policy is the file the user names (or the default preset), and the hidden
cases come from outside the reply, from `policy.hidden.path` or the file the policy's environment variable
names (`cases/hidden.py`). No run may read that file.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from gate.cases.hidden import load_hidden, places_to_hide
from gate.errors import read_input
from gate.policy.model import CaseSpec
from gate.policy_file import load_policy
from gate.report.templating import Overrides
from gate.sources.base import ScoreInput
from gate.sources.task import load_task
from gate.subject import Subject, Task


def reply_input(reply_path: Path, task_path: Path, policy_path: Path | None) -> ScoreInput:
    """What `gate score` scores: the reply, its task's cases, the policy and the hidden cases."""
    reply = read_input(reply_path, "reply file")
    task, cases = load_task(task_path)
    policy = load_policy(policy_path)
    subject = subject_from_reply(reply, reply_path, task, cases, load_hidden(policy, None))
    argv = ["gate", "score", str(reply_path), "--task", str(task_path)]
    argv += ["--policy", str(policy_path)] if policy_path else []
    return ScoreInput(subject, policy, Overrides(), shlex.join(argv), places_to_hide(policy))


def subject_from_reply(reply_text: str, reply_path: str | Path, task: Task | None,
                       cases: Sequence[CaseSpec] = (), hidden_cases: Sequence[CaseSpec] = ()) -> Subject:
    """The subject for one model reply: the extract check finds its code block, the cases run against it.

    `reply_path` names the reply in locations (`reply.md:12`), as the user typed it.
    """
    facts = (("task", task.name),) if task else ()
    return Subject(kind="reply", label=str(reply_path), reply=reply_text, task=task, cases=tuple(cases),
                   hidden_cases=tuple(hidden_cases), facts=facts)
