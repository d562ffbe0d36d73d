"""Tests of the DBOS integration (``stageware.dbos``): real DBOS, real databases."""
