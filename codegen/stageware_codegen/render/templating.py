"""Render the jinja2 templates in ``templates/`` beside this module into source text.

The environment is strict (an undefined variable is an error, not an empty string) and
does no HTML escaping: the templates produce Python, and everything they print was
computed and made safe by the ``view_*`` modules.
"""

from __future__ import annotations

from typing import Any

import jinja2

__all__ = ["render_template"]

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("stageware_codegen.render", "templates"),
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def render_template(name: str, view: dict[str, Any]) -> str:
    """Render ``templates/<name>.jinja`` with *view*."""
    return _ENV.get_template(f"{name}.jinja").render(view)
