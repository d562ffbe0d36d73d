"""Policy spec files: YAML in, the ``PolicyEntry`` list to install out.

The format (version 1); every key but ``version`` may be left out:

```yaml
version: 1
middleware:                          # in the order they run within a band
  - use: acme.no_weekend_refunds     # a plugin's qualified name, or package.module:attribute
    band: guardrail                  # baseline only in the org baseline profile
    hooks: [tool.before]             # a subset of the declared hook points
    settings: {limit: 500}           # for the middleware's config model
    fail_mode: closed                # only tightens: open -> closed
    timeout: 2s                      # only shortens: 250ms, 2s, 1.5m, 1h or seconds
retry_budgets: {model.response: 2}   # per hook point that allows Retry
blocked_message: "..."               # what the user reads when a run is blocked
escalated_message: "..."             # ... and when it is handed to a person
```

The org baseline profile, the operator's file, has the same shape and is read first; it
is the only file whose entries may use the baseline band, and an application spec may
not name what it installs (see ``_read``). PyYAML comes with the ``policy`` extra.

The steps, one module each: ``_source`` reads a file within a bound, ``_yaml`` parses it
keeping lines, ``_model`` and ``_validation`` check its shape (``_finite``: settings are
finite numbers), ``_references`` finds the middleware an entry names, and ``_read`` builds
the entries and holds the rules between files. ``_document`` is the parsed file and how
its problems are written (``file:line: path: message``).
"""

from ._read import PolicySpec, load_policy, read_policy

__all__ = ["PolicySpec", "load_policy", "read_policy"]
