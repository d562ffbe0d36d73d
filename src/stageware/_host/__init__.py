"""The reference agent host: a real agent loop that runs the three stages.

Implementation modules are private; their public names are re-exported from ``stageware``.
"""
