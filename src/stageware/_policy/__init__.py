"""The policy layer: declared middleware that decide outcomes at hook points.

Modules, in the order a policy is used:

- ``_declare``: ``@middleware``, ``MiddlewareDef``, ``FailMode``; ``_durations`` reads
  timeouts, ``_choices`` hook points, bands and fail modes with near-miss hints.
- ``_outcomes``: ``Continue``, ``Block``, ``Suspend``, ``Escalate``, ``Retry``, ``Guide``.
- ``_rules``: which outcome each hook point allows, what a modification may change, the
  default retry budget; ``_modified`` checks a ``Continue(modified=...)``.
- ``_env``: ``PolicyEnv``, a handler's second argument; ``_principal``: ``Principal``,
  who a run acts for, as the application passes it in ``invocation_state``.
- ``_entries``: ``PolicyEntry``, a middleware as a spec installs it; ``_errors``:
  ``SpecError``.
- ``_engine``: ``PolicyEngine``, the order per hook point, with each middleware resolved
  once per hook point (``_attached``); ``_agent_policy`` binds it to an agent's stage
  chains; ``_decide`` runs one hook point's middleware, with fail modes, timeouts and
  trace records, building each call's env and record through ``_records``; ``_approval``:
  the durable approval of a ``Suspend``, and ``_timeouts`` its deadline and what a
  timeout becomes.
- ``_spec/``: policy spec files (YAML) read into entries, ``load_policy`` and
  ``read_policy``; ``_plugins`` finds the middleware plugins contribute through entry
  points; ``_author_code`` contains what their code raises while a policy loads.

Public names are exported once, from ``stageware.policy``.
"""
