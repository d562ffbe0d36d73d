"""The DBOS integration behind ``stageware.dbos`` (the ``dbos`` extra).

- ``_waits``: a durable run's wait for a human (approvals, an escalation's resolution).
- ``_wake``: the wake-up that makes a waiting run look at its session again.

Only ``stageware.dbos`` imports these modules; ``stageware`` itself imports without dbos.
"""
