"""The files and variables a GitHub Actions runner gives a step: the event, the outputs, the job summary."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gate.errors import BadInput


def read_event(environ: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """The event's name and payload (`GITHUB_EVENT_NAME`, `GITHUB_EVENT_PATH`)."""
    name = environ.get("GITHUB_EVENT_NAME", "")
    path = environ.get("GITHUB_EVENT_PATH", "")
    if not name or not path:
        raise BadInput("not inside a GitHub Actions job: GITHUB_EVENT_NAME and GITHUB_EVENT_PATH are unset "
                       "(run `gate check` locally instead)", key="GITHUB_EVENT_PATH")
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"cannot read the event payload: {exc.strerror}", file=path) from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"the event payload is not JSON: {exc.msg}", file=path, line=exc.lineno) from None
    if not isinstance(payload, dict):
        raise BadInput("the event payload is not a JSON object", file=path)
    return name, payload


def set_outputs(environ: Mapping[str, str], values: Mapping[str, str]) -> None:
    """Append step outputs to `GITHUB_OUTPUT` (multi-line values in heredoc form with a random delimiter)."""
    path = environ.get("GITHUB_OUTPUT")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as out:
        for key, value in values.items():
            if "\n" in value:
                delimiter = f"ghadelimiter_{secrets.token_hex(8)}"
                out.write(f"{key}<<{delimiter}\n{value}\n{delimiter}\n")
            else:
                out.write(f"{key}={value}\n")


def append_summary(environ: Mapping[str, str], markdown: str) -> bool:
    """Append to the job summary (`GITHUB_STEP_SUMMARY`); False when there is none (outside Actions)."""
    path = environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    with open(path, "a", encoding="utf-8") as out:
        out.write(markdown.rstrip("\n") + "\n")
    return True
