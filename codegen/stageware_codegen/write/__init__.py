"""Step 4, format, check and write: finished module texts to files, or to a diff.

- ``banner``: the banner, which also records the schema a package belongs to.
- ``ownership``: generating into another schema's package, or a directory of other
  files, is refused unless forced.
- ``staging``: the package assembled in a staging directory, formatted by ``formatting``
  (one ruff run for all modules) and imported by ``import_check`` (a fresh interpreter).
- ``files``: the output directory opened for a write; the write itself, after the import
  check: changed modules moved in and stale ones removed in one ``journal`` transaction,
  under the directory's ``lock``; a write a dead process left behind is finished first.
- ``cache``: what the last generation did, so that an unchanged module is not formatted,
  converted or imported again.
- ``diff``: what ``check`` reports.

Everything a write creates lives inside the output directory (which may be a mount
point): a hidden staging directory and journal while it runs, the cache in
``__pycache__`` afterwards. Nothing is created beside it.

May import: the standard library, ruff, and the package's shared ``_errors`` and
``_project`` and ``_checker``; it works on texts, so nothing from the earlier steps.
"""
