"""Cedar policies as a policy middleware (the ``cedar`` extra, on cedarpy).

Modules, in the order a policy is built and used:

- ``_types``: JSON Schema to Cedar types, and values to the Cedar values they accept.
- ``_schema``: the Cedar schema of a policy (entity types, one action per decision, the
  contexts typed from the hook events and the tools' input schemas).
- ``_policies``: reading policy files into one set, and naming the file, line and column
  of a policy that does not parse or validate.
- ``_requests``: a hook event and its ``PolicyEnv`` as a Cedar request and its entities.
- ``_middleware``: ``cedar_policy``, the declared middleware, and its ``CedarSettings``.

Public names are exported once, from ``stageware.cedar``.
"""
