"""Durable agent runs on DBOS: the integration behind ``stageware.dbos``.

Everything here imports ``dbos``; nothing else in stageware does, so that ``import
stageware`` works without the extra. The host knows only its journal protocol
(``stageware._host._journal``), which ``_journal.DBOSJournal`` implements.
"""
