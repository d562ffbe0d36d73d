"""Policy spec files: YAML in, the ``PolicyEntry`` list to install out.

The steps, one module each: ``_yaml`` parses a file keeping lines, ``_model`` and
``_validation`` check its shape, ``_references`` finds the middleware an entry names, and
``_read`` builds the entries and holds the rules between files. ``_document`` is the
parsed file and how its problems are written.
"""

from ._read import PolicySpec, load_policy, read_policy

__all__ = ["PolicySpec", "load_policy", "read_policy"]
