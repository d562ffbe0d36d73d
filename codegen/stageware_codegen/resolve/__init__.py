"""Step 2, resolve: check what needs the whole schema, and build the IR the renderers read.

- ``schema``: the step's entry point, :func:`~.schema.resolve_schema`; events, stages,
  context fields.
- ``ir``: the resolved schema, the only thing the render step reads.
- ``namespace``, ``stage_names``: one namespace of declared and generated names.
- ``type_exprs``: type expressions parsed and checked; ``field_types`` and ``defaults``
  check a field's type and whether its default fits.
- ``external_types``: each ``types:`` entry names a module that has the name.
- ``interrupt_id``: interrupt-id templates; ``hooks``: hook points and their JSON
  payloads.

May import: the load step, the standard library and pydantic; nothing from render or
write.
"""
