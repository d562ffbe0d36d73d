"""Durable agent runs on DBOS: the integration behind ``stageware.dbos`` (the ``dbos`` extra).

- ``_agent``: ``DurableAgent``, a request a workflow, each invocation a child workflow;
  ``_replay``: where the session stands for an invocation that may be a replay;
  ``_ids``: the workflow ids; ``_result``: ``DurableResult``.
- ``_journal``: the host's step journal (``stageware._host._journal``) on DBOS steps.
- ``_launch``: DBOS's configuration, the executor id, the shutdown.
- ``_waits``: a durable run's wait for a human (approvals, an escalation's resolution).
- ``_wake``: the wake-up that makes a waiting run look at its session again.
- ``_client``: a request put on a queue by a process that runs none (a ``DBOSClient``).

Everything here imports ``dbos``; nothing else in stageware does (only ``stageware.dbos``
imports these modules), so that ``import stageware`` works without the extra.
"""
