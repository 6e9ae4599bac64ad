"""The commands: what each one does with the pipeline's stages, and what its arguments mean.

``kernel_ports.cli`` parses the command line and hands each command to its module here; a command's module
judges its own arguments (a bad one is a one-line ``UsageError``, exit 2) and runs the stages.

- ``init`` (:mod:`.init`): a first registry written from the code; ``sync`` (:mod:`.sync`): an existing registry
  refreshed from the code, comments kept; ``--baseline`` for both (:mod:`.adopt`): today's findings recorded
  as exemptions, so the gate starts green
- ``matrix``, ``status rocm`` (:mod:`.coverage`): the kernels × backends matrix and the ROCm checklist;
  ``matrix --format html`` (:mod:`.dashboard`): the same as one self-contained page
- ``port`` (:mod:`.port`): a kernel's port for one backend generated from its port for another
"""
