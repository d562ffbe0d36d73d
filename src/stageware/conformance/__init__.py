"""The policy conformance suite: does a plugin's middleware keep the policy layer's rules?

For every declared middleware the suite builds it with its ``sample`` settings, then, at
each hook point it declares, calls it with events generated from that hook's event model
(hypothesis, derandomized: the same events on every run) and checks that it

- returns ``None`` or an outcome allowed at that hook (the policies guide's outcome table),
- returns within its declared timeout (on asyncio, and on trio if asked),
- leaves the event it was given unchanged,
- returns a ``Continue(modified=...)`` that validates and changes only what the hook lets
  a policy change,
- does not raise.

A failure names the middleware, the hook point, the event (as JSON) and what was wrong.
It needs hypothesis, from the ``testing`` extra (``pip install -e '.[testing]'`` in a clone).

In a test module of the plugin, one line makes a test per middleware and hook point:

```python
import acme_policies
from stageware.conformance import conformance_test

test_conformance = conformance_test(acme_policies)  # or "acme": the installed plugin
```

From the command line, on every middleware an installed plugin contributes, with no test
module at all, through the suite's pytest plugin (opt-in, see ``stageware.conformance.plugin``):

```bash
pytest -p stageware.conformance.plugin --stageware-conformance=acme
pytest -p stageware.conformance.plugin --stageware-conformance=acme \
    --stageware-conformance-backend=trio
```

From code, without pytest:

```python
from stageware.conformance import check_middleware

for failure in check_middleware(acme_policies.no_weekend_refunds):
    print(failure)
```

Generated events rarely name the tool or hold the amount a middleware tests for: give the
ones that reach its branches too, ``events=[ToolCallEvent(...)]``, to ``conformance_test``,
``check_middleware`` or ``assert_conforms``; each is fed, before the generated ones, to the
middleware that declare its hook point.
"""

from __future__ import annotations

from stageware import _extras

try:
    from stageware._policy.conformance._cases import ConformanceCase
    from stageware._policy.conformance._failures import Check, ConformanceError, ConformanceFailure
    from stageware._policy.conformance._parametrize import conformance_test
    from stageware._policy.conformance._strategies import event_strategy, model_strategy
    from stageware._policy.conformance._suite import (
        DEFAULT_EXAMPLES,
        UNDECLARED_TIMEOUT,
        Backend,
        assert_conforms,
        check_middleware,
    )
except ModuleNotFoundError as _missing:
    # Only a missing hypothesis gets the install hint; any other missing module is a bug.
    if _missing.name is None or _missing.name.partition(".")[0] != "hypothesis":
        raise
    raise ImportError(
        "stageware.conformance needs the 'hypothesis' package, from "
        + _extras.needs_extra("testing")
    ) from _missing

__all__ = [
    "DEFAULT_EXAMPLES",
    "UNDECLARED_TIMEOUT",
    "Backend",
    "Check",
    "ConformanceCase",
    "ConformanceError",
    "ConformanceFailure",
    "assert_conforms",
    "check_middleware",
    "conformance_test",
    "event_strategy",
    "model_strategy",
]
