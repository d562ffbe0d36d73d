"""The approvals and escalations web console; the public names are in ``stageware.console``."""
