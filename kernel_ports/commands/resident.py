"""What a check and the resident server that can run it share: where the server listens, how they speak, and
the client side (a ``check`` or ``facts`` handed to a running ``kernel-ports serve``).

A server listens on a Unix socket named after the installation it runs (:func:`installation_stamp`: this package's
files, the interpreter, the installed distributions), in a folder only its user can open
(``$XDG_RUNTIME_DIR/kernel-ports``, else ``kernel-ports-<uid>`` under the temporary folder). A command finds the
socket of its own installation or none, so a server never runs a check with code other than the command's.

The command sends its arguments, working folder, environment, umask and the encodings of its standard streams,
with the streams themselves (their file descriptors, over the socket): the served check writes to the terminal,
pipe or file the command was given, and its exit code comes back as the command's. When no server is listening,
or it refuses the request, the command runs in its own process as it always does. ``KERNEL_PORTS_NO_SERVER=1``
makes every command run in its own process.

Only this module is imported before a command knows whether a server will run it, so it imports only the
standard library's socket, JSON and hashing (paths are strings: ``pathlib`` and what it imports were ~3 ms of every
served command). The stamp's SHA-256 is the interpreter's own module's where it has one: ``hashlib`` loads OpenSSL
first, ~4 ms of every served command.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
import sys

try:  # CPython's built-in SHA-256 (named _sha2 from 3.12), the same digest as hashlib's
    from _sha256 import sha256
except ImportError:
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

NO_SERVER_ENV = "KERNEL_PORTS_NO_SERVER"
SERVED_COMMANDS = ("check", "facts")
MAX_MESSAGE = 4 * 1024 * 1024  # a request (arguments and environment) or a reply; anything longer ends the talk
EXIT_ERROR = 2

_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def installation_stamp() -> str:
    """A digest of what a process of this installation runs: the interpreter, every file of this package (path, size,
    modification time) and the names of the distributions installed beside it (a version is in each name)."""
    h = sha256(f"{sys.executable}|{sys.version}|{_PACKAGE}".encode())
    for folder, subfolders, files in os.walk(_PACKAGE):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(files):
            st = os.stat(os.path.join(folder, name))
            h.update(f"|{folder}/{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    for entry in sys.path:
        if entry.endswith("-packages") and os.path.isdir(entry):
            h.update("|".join(sorted(n for n in os.listdir(entry) if n.endswith((".dist-info", ".egg-info")))).encode())
    return h.hexdigest()[:24]


def socket_folder() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "kernel-ports")
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"kernel-ports-{os.getuid()}")


def socket_path(stamp: str) -> str:
    return os.path.join(socket_folder(), f"{stamp}.sock")


def memory_path(stamp: str) -> str:
    """Where a server keeps, between its runs, what the last check imported and read (``serve.read_memory``)."""
    return os.path.join(socket_folder(), f"{stamp}.memory.json")


def private_folder(folder) -> bool:
    """Whether ``folder`` is a real folder of this user that no one else may open (where a socket may be trusted)."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


class Channel:
    """Length-prefixed JSON messages over a stream socket, with file descriptors beside the first."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._buffer = b""
        self.fds: list = []

    def send(self, message, fds: tuple = ()) -> None:
        data = json.dumps(message).encode("utf-8")
        frame = struct.pack(">I", len(data)) + data
        sent = socket.send_fds(self.sock, [frame], list(fds)) if fds else 0
        self.sock.sendall(frame[sent:])

    def receive(self, fds: int = 0):
        """The next message (EOFError when the other end closed first; ValueError for one too long or not JSON);
        up to ``fds`` descriptors sent with it are kept in ``self.fds``."""
        while True:
            if len(self._buffer) >= 4:
                (length,) = struct.unpack(">I", self._buffer[:4])
                if length > MAX_MESSAGE:
                    raise ValueError("message too long")
                if len(self._buffer) >= 4 + length:
                    data, self._buffer = self._buffer[4:4 + length], self._buffer[4 + length:]
                    return json.loads(data)
            if fds and not self.fds:
                chunk, got, _, _ = socket.recv_fds(self.sock, 65536, fds)
                self.fds = list(got)
            else:
                chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self._buffer += chunk


def _stream(n: int, stream) -> tuple:
    """(descriptor or None, encoding, errors) of one standard stream of this process."""
    try:
        os.fstat(n)
    except OSError:
        return None, None, None
    return n, getattr(stream, "encoding", None), getattr(stream, "errors", None)


def connect(stamp: str | None = None) -> socket.socket | None:
    """A connection to this installation's server, or None when none listens where only this user can reach."""
    # the folder first: where no server ever listened, a command pays one lstat, not the stamp's walk
    if not private_folder(socket_folder()):
        return None
    path = socket_path(stamp or installation_stamp())
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def served(argv: list) -> int | None:
    """Run the command ``argv`` in this installation's server: its exit code, or None when it must run here."""
    if not argv or argv[0] not in SERVED_COMMANDS or os.environ.get(NO_SERVER_ENV) or not hasattr(socket, "send_fds"):
        return None
    sock = connect()
    if sock is None:
        return None
    with sock:
        channel = Channel(sock)
        streams = [_stream(n, s) for n, s in ((0, sys.stdin), (1, sys.stdout), (2, sys.stderr))]
        umask = os.umask(0o022)
        os.umask(umask)
        request = {"argv": list(argv), "prog": sys.argv[0] if sys.argv else "kernel-ports", "cwd": os.getcwd(),
                   "env": dict(os.environ), "umask": umask, "streams": [[fd is not None, e, r] for fd, e, r in streams]}
        try:
            channel.send(request, fds=tuple(fd for fd, _, _ in streams if fd is not None))
            reply = channel.receive()
        except (OSError, EOFError, ValueError):
            return None  # (nothing ran: the command runs here)
        if type(reply) is not dict or not reply.get("started"):
            return None
        return _wait_for_exit(channel)


def _wait_for_exit(channel: Channel) -> int:
    """The served command's exit code. Interrupted, the command asks the server to interrupt it and waits for it to
    say so on the streams it was given; interrupted again, it stops waiting."""
    try:
        try:
            reply = channel.receive()
        except KeyboardInterrupt:
            channel.sock.shutdown(socket.SHUT_WR)  # the server interrupts the check when this end closes
            channel.sock.settimeout(10)
            reply = channel.receive()
    except (OSError, EOFError, ValueError, KeyboardInterrupt):
        print("kernel-ports: the server ended before the check did", file=sys.stderr)
        return EXIT_ERROR
    code = reply.get("exit") if type(reply) is dict else None
    return code if type(code) is int else EXIT_ERROR
