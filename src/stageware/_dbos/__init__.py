"""stageware.dbos's implementation: durable agent runs on DBOS (the ``dbos`` extra)."""
