"""Step 4, format, check and write: finished module texts to files, or to a diff.

- ``formatting``: the banner, ruff's formatting and a compile, module by module.
- ``import_check``: the whole package imported in a fresh interpreter, from a staging
  directory.
- ``files``: the atomic write, after the import check; stale files removed.
- ``diff``: what ``check`` reports; ``banner``: which files are the generator's.

May import: the standard library and the package's shared ``_errors``; it works on
texts, so nothing from the earlier steps.
"""
