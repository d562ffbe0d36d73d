"""Subcommands of the ``stageware`` command line that run on the runtime alone.

The command line's entry point and table of commands live in ``stageware_codegen.cli``;
a subcommand whose work needs only the runtime (and not the ``codegen`` extra) keeps that
work here, one module per subcommand, each importing what it uses when it runs.

- ``_policy_check``: ``policy check``: validate a policy spec, list what runs where.
"""
