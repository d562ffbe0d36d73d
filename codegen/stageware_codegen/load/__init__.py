"""Step 1, load: read the schema and its payload files, and check the shape of every value.

- ``schema``: the step's entry point, :func:`~.schema.load_schema`.
- ``yaml_document``, ``json_document``: YAML and JSON as plain data, with the line of
  every node; ``documents`` holds what they share (the limits, UTF-8 decoding).
- ``spec``: the schema's shape as pydantic models; ``validation_messages`` turns
  pydantic's errors into schema terms.
- ``names``, ``docs``: what a declared name or a doc may be; ``reserved``: the names
  generated code binds itself, which the schema may not declare.
- ``payloads``: the payload files, merged; ``payload_subset`` is the JSON Schema they may
  use and ``payload_values`` what a value of it is.
- ``diagnostics``: problems collected with their file, line and document path.

May import: the standard library, pyyaml, pydantic, and the package's shared
``_errors`` and ``_project``; nothing from the later steps.
"""
