"""Subcommands of the ``stageware`` command line that run on the runtime alone.

The command line's entry point and table of commands live in ``stageware_codegen.cli``;
a subcommand whose work needs only the runtime (and not the ``codegen`` extra) keeps that
work here, one module per subcommand, each importing what it uses when it runs.

- ``_policy_check``: ``policy check``: validate a policy spec, list what runs where.
- ``_policy_escalations``: ``policy escalations``: list, claim and resolve escalations.
- ``_policy_approvals``: ``policy approvals``: list suspended approvals, answer one.
- ``_console``: ``console``: serve the web console (``stageware._console``) over a store.
- ``_cedar_schema``: ``cedar schema``: the Cedar schema of the Cedar policy middleware.

What the store commands share: ``_store_url`` (the store ``--store`` names, opened only
if it holds sessions), ``_table`` (plain-text tables, cells made safe), ``_options``
(options that go together), ``_operator`` (who runs the command, verified: the OS account
or a deployment's authenticator), ``_wake`` (waking the durable run an answer releases)
and ``_errors`` (a failure as one line, exit status 2). An answer to an approval is
recorded by the policy layer's ``_answering``, the one path the console uses too.
"""
