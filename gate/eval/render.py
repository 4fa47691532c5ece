"""Terminal text for eval, diff and merge, from the Jinja2 templates in gate/eval/templates."""

from __future__ import annotations

from typing import Any

import jinja2

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("gate.eval", "templates"),
                          undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True,
                          lstrip_blocks=True, autoescape=False)


def render_template(template: str, **context: Any) -> str:
    """Render one template of gate/eval/templates."""
    return _ENV.get_template(template).render(**context)
