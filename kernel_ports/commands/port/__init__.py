"""`kernel-ports port`: generate a kernel's port for one backend from its port for another.

`renames` holds the CUDA <-> HIP device-code rename tables, `edits` the
anchored text edits, `shape` where each piece goes in the engine's files,
`generate` the plan from the facts, `apply` the scratch-copy re-check, the
registry refresh (through `sync`), the diff and the write.
"""
