"""The policy conformance suite; public as ``stageware.conformance`` (and its pytest plugin
as ``stageware.conformance.plugin``).

Steps, a module each: ``_strategies`` (hypothesis strategies read off the event models),
``_examples`` (a fixed set of events per hook point), ``_checks`` (one call and what is
checked about it), ``_suite`` (``check_middleware``), ``_failures`` (what is reported).
Around them: ``_discover`` (middleware in a module or an installed plugin), ``_cases``,
``_parametrize`` (``conformance_test``) and ``_plugin`` (the pytest plugin). Nothing here
is imported by the rest of stageware: it sits on top of the policy layer, and only it
needs hypothesis.
"""
