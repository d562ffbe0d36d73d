"""Tests of stageware.dbos: durable agent runs on DBOS."""
