"""Step 3, render: the source text of every generated module, from the resolved schema.

- ``package``: the step's entry point, :func:`~.package.render_package`.
- ``view_contexts``, ``view_events``, ``view_surface``, ``view_policy``: compute
  everything a template prints (``viewkit`` holds what they share, ``imports`` the
  import blocks, ``docstrings`` the quoting of docs); templates only loop and print.
- ``templating`` and ``templates/``: the jinja2 templates, beside the code that fills
  them.
- ``datamodel``: the payload types, by datamodel-code-generator.

May import: the load and resolve steps, jinja2; nothing from write.
"""
