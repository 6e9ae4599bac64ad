"""The ``kernel-ports`` command (``python -m kernel_ports``, the installed script): handed to a running
``kernel-ports serve`` of this installation when one listens (:mod:`kernel_ports.commands.resident`), else run in
this process (:func:`kernel_ports.cli.main`)."""

from __future__ import annotations

import os
import sys


def entry() -> None:
    """The ``kernel-ports`` command (and ``python -m kernel_ports``): a running ``kernel-ports serve`` of this
    installation running it, else :func:`kernel_ports.cli.main` in this process, then an exit that skips the
    interpreter's teardown. Only this module and the client's are imported before the server answers (the command
    line's parser and the commands are not: ~0.01 s of a served command).

    Freeing every object of a run one by one at exit (the index's records, the cached results) took 0.05-0.08 s
    of a one-file check. The exit handler is registered before anything else, so it runs after every other
    ``atexit`` handler (multiprocessing's, which ends the parser processes, among them); it flushes the standard
    streams and ends the process with ``os._exit`` and the command's code. A ``SystemExit`` out of
    ``main`` (``--help``, a usage error from the argument parser) exits the ordinary way. Tests call
    ``main``, which returns.

    The cyclic garbage collector is off for the whole command: the index is built with it paused already, and the
    first collections after it would walk every object the index holds (0.05-0.08 s of a one-file check, spent in
    the device stage and the rules) to free none of them, the exit freeing nothing anyway. What the command
    allocates after the index (device builds, findings, the report) is bounded by the index; the parser and
    prelude processes turn the collector on for themselves."""
    import atexit
    import gc

    gc.disable()
    code: list = []

    def exit_now():
        if code:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code[0])

    atexit.register(exit_now)
    from kernel_ports.commands.resident import served

    at_server = served(sys.argv[1:])
    if at_server is None:
        # the command line's parser and the commands are imported only now: a served command never needs them
        from kernel_ports import cli

        at_server = cli.main()
    code.append(at_server)
    raise SystemExit(code[0])
