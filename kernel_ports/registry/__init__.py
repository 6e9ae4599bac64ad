"""The registry: what the code is meant to be, read with file:line errors, and written back as text.

- :mod:`.model` the frozen dataclasses a registry is; ``schema.json`` its JSON Schema
- :mod:`.load` ``load_registry``: the YAML read, checked against the schema, turned into the model
- :mod:`.bounds` what a registry file may make the loader do (size, nesting, aliases)
- :mod:`.text` a registry rendered as YAML text (what ``init`` writes, the kernels ``sync`` adds)
- :mod:`.roundtrip` an existing registry edited in ruamel.yaml's round-trip mode, its comments and order kept
"""
