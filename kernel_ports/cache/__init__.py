"""The cache: data only (JSON), never code, in one folder of the user's cache directory.

- :mod:`.format` the file format of every entry: versioned, hash-checked, decoded only into the front ends'
  dataclasses and the findings
- :mod:`.units` the per-file and per-unit entries of the index (the witness's, the Clang parses', a project
  header's function records shared by the units that read it), their keys and ``FRONTEND_VERSION``, the front
  ends' own source folded into every key
- :mod:`.check_entry` the whole-check entry: a check whose every input is unchanged answers from one read,
  importing neither libclang nor the registry loader
"""
