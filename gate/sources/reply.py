"""A model reply and its task as a subject: the third seed's scorer input."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gate.policy.model import CaseSpec
from gate.subject import Subject, Task


def subject_from_reply(reply_text: str, reply_path: str | Path, task: Task | None,
                       cases: Sequence[CaseSpec] = ()) -> Subject:
    """The subject for one model reply: the extract check finds its code block, the cases run against it.

    `reply_path` names the reply in locations (`reply.md:12`), as the user typed it.
    """
    facts = (("task", task.name),) if task else ()
    return Subject(kind="reply", label=str(reply_path), reply=reply_text, task=task, cases=tuple(cases),
                   facts=facts)
