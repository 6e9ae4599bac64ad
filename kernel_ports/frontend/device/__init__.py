"""Device builds: every HIP body compiled offline as the ROCm runtime would compile it (SPEC §5 "Device builds").

A front end of its own beside Clang and tree-sitter; it knows no rules. Its parts, one module each:

| module | owns |
|---|---|
| ``build_model.py`` | the plain data a build is described and answered by (cached as data) |
| ``source.py`` | the translation unit the runtime would build for a body: MLX ROCm's default header, the call's header, one kernel per variant (dtype and constant assignment) with ``#line`` marks back into the body's file |
| ``compiler.py`` | finding hipcc and its version; the compile itself (fixed flags, a scratch directory, time and memory limits) |
| ``reports.py`` | reading what the compiler said: diagnostics mapped to the body and variant, resource-usage remarks, the cross-lane intrinsics of each kernel's device IR |
"""
