"""``kernel-ports serve``: a resident process that runs the ``check`` and ``facts`` commands of the developer's edit
loop with nothing to import and the cache's entries already decoded.

A command of the same installation finds the server's socket (:mod:`kernel_ports.commands.resident`) and hands
it its arguments, environment and standard streams. The server forks a process for that one command, which
runs it as the command's own process would (:func:`kernel_ports.cli.main`) and writes to the command's streams.
So nothing a check does stays in the server but what the server keeps on purpose, and a served check's report is
the one the command would print by itself. What the server keeps:

- the modules a check imported (the first check imports them; the server then does, so every later check
  finds them imported);
- the cache entries the last check read or stored, decoded (:class:`kernel_ports.cache.resident.ResidentEntries`),
  which the next check takes instead of reading their files while the files are unchanged;
- the content digests of the header folders the checks resolved (``frontend.headers.KEPT_DIGESTS``), which the next
  check takes while each folder's listing (paths, sizes, modification times, inodes) is unchanged.

The first two lists are also written, as data, beside the socket (``<stamp>.memory.json``, in the same private
folder), so a server started again imports and decodes them before its first command: a restarted server's first
check is as quick as its later ones. A list naming an entry since rewritten or removed costs nothing: an entry
stands for its file only while the file is unchanged.

One command runs at a time; others wait. Only the user who started the server can reach it (its folder and
socket are that user's alone, and each caller's user is checked). It stops after ``--idle-minutes`` without a
command, on ``serve --stop``, or on Ctrl-C. It runs nothing a caller names but this package's commands.

The gate of a pull request needs no server: a command that finds none runs in its own process, and the reports
are the same either way.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import re
import select
import signal
import socket
import struct
import sys
import time

from kernel_ports.cache import check_entry, format as cachefmt
from kernel_ports.cache.resident import ResidentEntries
from kernel_ports.cache.units import named_entries
from kernel_ports.commands import resident
from kernel_ports.commands.common import EXIT_ERROR, UsageError
from kernel_ports.frontend import headers
from kernel_ports.index import pool as parse_pool

REQUEST_SECONDS = 10.0  # how long a caller has to send its request
MEMORY_BYTES = 4 * 1024 * 1024  # the most of a memory file the server reads (a real engine's is ~40 KB)
_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
INTERRUPT_GRACE = 5.0  # seconds a check has to end after its caller was interrupted, before it is killed


def cmd_serve(args, run) -> int:
    """``run``: the command line's ``main`` (argv -> exit code), which each served command's process calls."""
    stamp = resident.installation_stamp()
    path = resident.socket_path(stamp)
    if args.stop or args.status:
        return _ask(stamp, path, "stop" if args.stop else "status")
    if args.idle_minutes < 0:
        raise UsageError("kernel-ports serve: --idle-minutes must be 0 (never) or more")
    listener = _listen(stamp, path)
    # ended by a signal (a terminal closed, `kill`), the server stops as on Ctrl-C and removes its socket
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGHUP, signal.default_int_handler)
    print(f"kernel-ports serve: listening on {path} for this installation; `check` and `facts` run here until "
          f"{_until(args.idle_minutes)} (Ctrl-C or `kernel-ports serve --stop` ends it)", file=sys.stderr, flush=True)
    try:
        Server(listener, args.idle_minutes * 60.0, run, memory=resident.memory_path(stamp)).run()
    except KeyboardInterrupt:
        pass
    finally:
        listener.close()
        try:
            os.unlink(path)
        except OSError:
            pass
    print("kernel-ports serve: stopped", file=sys.stderr)
    return 0


def _until(minutes: int) -> str:
    return "stopped" if minutes == 0 else f"{minutes} minute(s) pass without a command"


def _ask(stamp: str, path, what: str) -> int:
    sock = resident.connect(stamp)
    if sock is None:
        print(f"kernel-ports serve: no server of this installation is listening (would be {path})")
        return 1 if what == "status" else 0
    with sock:
        channel = resident.Channel(sock)
        channel.send({what: True})
        reply = channel.receive()
    print(f"kernel-ports serve: {reply.get('said', 'no answer')}")
    return 0


def _listen(stamp: str, path) -> socket.socket:
    folder = os.path.dirname(path)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise UsageError(f"kernel-ports serve: cannot make {folder}: {exc.strerror}") from None
    if not resident.private_folder(folder):
        raise UsageError(f"kernel-ports serve: {folder} is not a folder only this user can open; not listening there")
    probe = resident.connect(stamp)
    if probe is not None:
        probe.close()
        raise UsageError(f"kernel-ports serve: a server of this installation is already listening on {path}")
    try:
        os.unlink(path)  # a socket left by a server that did not stop
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(str(path))
    except OSError as exc:  # (a socket's path has ~107 bytes at most)
        listener.close()
        raise UsageError(f"kernel-ports serve: cannot listen on {path}: {exc}; a shorter $XDG_RUNTIME_DIR may help") from None
    finally:
        os.umask(old)
    listener.listen(16)
    return listener


def _caller_is_this_user(conn: socket.socket) -> bool:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", creds)
    return uid == os.getuid()


class Server:
    def __init__(self, listener: socket.socket, idle_seconds: float, run, memory=None):
        self.listener = listener
        self.memory = memory  # where what the last check imported and read is kept across restarts (None: nowhere)
        self.run_command = run
        self.idle_seconds = idle_seconds
        self.entries = ResidentEntries()
        self.running = True
        self.checks = 0
        self.modules: list = []  # modules the last check imported that the server has not
        # nothing the server keeps is ever freed by the cyclic collector (decoded entries hold no cycles), and a
        # collection in the server would walk every kept value; a check's process has it off as the command has
        gc.disable()
        remembered = read_memory(memory) if memory is not None else {}
        self._learn(remembered.get("read"), remembered.get("modules"))
        # the digest of this installation's files that keys every check entry, taken once here for every command
        # (its processes fork from this one): the code they run is what this server imports, and a changed file
        # changes the installation's stamp, so no command of the changed installation comes here (~0.01 s a check)
        check_entry.tool_digest()

    def run(self) -> None:
        while self.running:
            # between commands the server does its own work (imports, decoding) a step at a time, and a caller is
            # served as soon as it connects
            busy = bool(self.modules or self.entries.waiting())
            ready, _, _ = select.select([self.listener], [], [], 0 if busy else (self.idle_seconds or None))
            if ready:
                self._accept()
            elif self.modules:
                _import_quietly(self.modules.pop(0))
            elif busy:
                self.entries.decode_one(cachefmt.read_entry_file, named_entries)
            else:
                return  # idle for too long

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            try:
                self._serve(conn)
            except (OSError, EOFError, ValueError) as exc:
                print(f"kernel-ports serve: a caller's request failed: {exc}", file=sys.stderr, flush=True)

    def _serve(self, conn: socket.socket) -> None:
        if not _caller_is_this_user(conn):
            return
        channel = resident.Channel(conn)
        conn.settimeout(REQUEST_SECONDS)  # a caller that connects and says nothing does not hold the server
        try:
            request = channel.receive(fds=3)
            conn.settimeout(None)
            refusal = _refusal(request, channel.fds)
            if refusal == "stop":
                self.running = False
                channel.send({"said": "stopped"})
            elif refusal == "status":
                channel.send({"said": f"listening, {self.checks} command(s) run, {len(self.entries)} entries kept"})
            elif refusal is not None:
                channel.send({"refused": refusal})
            else:
                self._run_command(channel, request)
        finally:
            for fd in channel.fds:
                os.close(fd)

    def _run_command(self, channel: resident.Channel, request: dict) -> None:
        start = time.perf_counter()
        report_here, report_there = socket.socketpair()
        channel.send({"started": True})
        pid = os.fork()
        if pid == 0:
            report_here.close()
            self.listener.close()
            _child(self.run_command, channel, request, resident.Channel(report_there), self.entries)  # never returns
        report_there.close()
        # the caller's streams are the command's process's now: the server's copies would keep a pipe the caller
        # reads to its end open for as long as that process lives on after its answer
        for fd in channel.fds:
            os.close(fd)
        channel.fds = []
        with report_here:
            report = _watch(pid, channel.sock, resident.Channel(report_here))
        self.checks += 1
        read = report.get("read")
        self._learn(read, report.get("modules"))
        headers.keep_digests(report.get("digests"))  # the next command's process takes them while the files stand
        if self.memory is not None and type(read) is dict and read:
            write_memory(self.memory, {"read": read, "modules": report.get("modules")})
        print(f"kernel-ports serve: {request['argv'][0]} in {request['cwd']}: exit {report.get('exit', '?')} in "
              f"{time.perf_counter() - start:.2f} s, {report.get('hits', 0)} of {len(read or ())} entries from memory",
              file=sys.stderr, flush=True)

    def _learn(self, read, modules) -> None:
        """Keep what a check read (path -> key; ``after_check`` keeps only strings) and import what it imported,
        while the server is idle."""
        self.entries.after_check(read if type(read) is dict else {})
        self.modules = [m for m in (modules if type(modules) is list else ())
                        if type(m) is str and _MODULE_NAME.fullmatch(m) and m not in sys.modules]


def read_memory(path) -> dict:
    """What a server of this installation remembered (``{"read": {path: key}, "modules": [name]}``), or {} when
    there is none or it is not such data."""
    try:
        with open(path, "rb") as f:
            data = f.read(MEMORY_BYTES + 1)
        memory = json.loads(data) if len(data) <= MEMORY_BYTES else None
    except (OSError, ValueError):
        return {}
    return memory if type(memory) is dict else {}


def write_memory(path, memory: dict) -> None:
    """Replace the memory file whole (a server reading it at its start sees the old list or the new one)."""
    part = f"{path}.{os.getpid()}.part"
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(memory, f)
        os.replace(part, path)
    except (OSError, TypeError, ValueError) as exc:
        print(f"kernel-ports serve: cannot keep what the check read in {path}: {exc}", file=sys.stderr, flush=True)
        try:
            os.unlink(part)
        except OSError:
            pass


def _import_quietly(name: str) -> None:
    """Import a module a check imported (one the server cannot import is only not kept)."""
    if name not in sys.modules:
        try:
            importlib.import_module(name)
        except Exception:
            pass


def _refusal(request, fds: list):
    """None for a command to run; "stop" or "status" for those asks; else why the command must run in its own process."""
    if type(request) is not dict:
        return "not a request"
    if request.get("stop") or request.get("status"):
        return "stop" if request.get("stop") else "status"
    argv, env, streams = request.get("argv"), request.get("env"), request.get("streams")
    if type(argv) is not list or not argv or argv[0] not in resident.SERVED_COMMANDS or \
            not all(type(a) is str for a in argv):
        return "not a command the server runs"
    if type(env) is not dict or not all(type(k) is str and type(v) is str for k, v in env.items()):
        return "no environment"
    if type(streams) is not list or len(streams) != 3 or sum(1 for s in streams if s and s[0]) != len(fds):
        return "its streams did not arrive"
    if type(request.get("cwd")) is not str or type(request.get("umask")) is not int or type(request.get("prog")) is not str:
        return "no working folder"
    return None


def _watch(pid: int, caller: socket.socket, report: resident.Channel) -> dict:
    """Wait for the command's process to end and return what it reports; a caller that goes away (interrupted)
    gets its command interrupted, and killed if it does not end soon after."""
    deadline = None
    watched = [report.sock, caller]
    got: dict = {}
    while True:
        ready, _, _ = select.select(watched, [], [], 0.5 if deadline else None)
        if report.sock in ready:
            try:
                got = report.receive()
            except (EOFError, ValueError, OSError):
                pass
            break
        if caller in ready:
            watched = [report.sock]  # the caller says nothing more but that it went away
            if _gone(caller):
                _signal_group(pid, signal.SIGINT)
                deadline = time.monotonic() + INTERRUPT_GRACE
        if deadline is not None and time.monotonic() > deadline:
            break
    # the command's process still says its exit code to the caller after its report: it has a moment to end
    _ended_within(pid, INTERRUPT_GRACE if deadline is None else 0.0)
    _signal_group(pid, signal.SIGKILL)  # any parser process it left (and itself, if it did not end)
    os.waitpid(pid, 0)
    return got if type(got) is dict else {}


def _ended_within(pid: int, seconds: float) -> bool:
    """Whether the process ended within ``seconds``; it is not reaped (its group's number stays its own)."""
    end = time.monotonic() + seconds
    while True:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.002)


def _gone(caller: socket.socket) -> bool:
    try:
        return caller.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _signal_group(pid: int, sig) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _child(run, caller: resident.Channel, request: dict, report: resident.Channel, entries: ResidentEntries) -> None:
    """The command's own process: take the caller's streams, folder and environment, run the command, say its exit
    code to the caller and what it read to the server."""
    code = EXIT_ERROR
    try:
        os.setpgid(0, 0)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        _take_streams(caller.fds, request["streams"])
        os.chdir(request["cwd"])
        os.umask(request["umask"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [request["prog"], *request["argv"]]
        entries.begin_check()
        cachefmt.RESIDENT = entries
        parse_pool.AFTER_ANSWER = []  # the parser processes end after the caller has its answer (below)
        try:
            code = run(request["argv"])
        except SystemExit as exc:  # (--help, and the argument parser's own exits)
            code = exc.code if type(exc.code) is int else (0 if exc.code is None else EXIT_ERROR)
        sys.stdout.flush()
        sys.stderr.flush()
        # the server first: once the caller has its code it goes away, which the server would take for an interrupt
        report.send({"exit": code, "read": entries.read, "hits": entries.hits, "modules": _imported(),
                     "digests": headers.kept_digests()})
        caller.send({"exit": code})
    except BaseException as exc:  # the command's own errors are main's; this is the process around it failing
        try:
            print(f"kernel-ports: the server could not run the command: {type(exc).__name__}: {exc}", file=sys.stderr)
            sys.stderr.flush()
            caller.send({"exit": EXIT_ERROR})
        except BaseException:
            pass
    finally:
        _after_answer()
        os._exit(code if type(code) is int else EXIT_ERROR)


def _after_answer() -> None:
    """What the command left for after its answer: its parser processes' ends, each storing the entries it kept
    first (the server waits for this process before it runs the next command). The caller's streams are let go
    first: a caller reading them to their end (a pipe) is done with the answer."""
    deferred = parse_pool.AFTER_ANSWER or ()
    if deferred:
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.close(devnull)
        except OSError:
            pass
    for close in deferred:
        try:
            close()
        except BaseException:
            pass  # (entries are an optimisation: the next check parses what was not stored)


def _imported() -> list:
    """The modules the command imported, and those its parser processes import (``index.pool.WORKER_MODULES``):
    the server imports them all while idle."""
    return sorted(set(sys.modules) | set(parse_pool.WORKER_MODULES))


def _take_streams(fds: list, streams: list) -> None:
    """Make the caller's standard streams this process's, with the caller's encodings and buffering."""
    given = iter(fds)
    for n, (present, _, _) in enumerate(streams):
        fd = next(given) if present else os.open(os.devnull, os.O_RDWR)
        os.dup2(fd, n)
        os.close(fd)

    def text(n: int, mode: str, buffering: int):
        _, encoding, errors = streams[n]
        return open(n, mode, buffering=buffering, encoding=encoding or None, errors=errors or None, closefd=False)

    sys.stdin = text(0, "r", -1)
    sys.stdout = text(1, "w", 1 if os.isatty(1) else -1)
    sys.stderr = text(2, "w", 1)
