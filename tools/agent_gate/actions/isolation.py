"""Each run of a property in namespaces of its own, so nothing it writes reaches the other run.

The runner forks a chain of three processes per run:

* `A` (`_outer`) unshares a user, mount, PID, IPC and network namespace and maps
  its own uid and gid into it, so it works as root and as any user, inside
  linux-sandbox and without it;
* `B` (`_init`) is PID 1 of the new PID namespace. It makes every mount private
  and read-only, mounts fresh tmpfs on /tmp and /dev/shm (what was there stays
  visible, read-only), a /proc of its own and brings up loopback, then forks the
  run and waits for it. When it exits the
  kernel kills whatever the run left in the namespace;
* `C` (`_run`) enters a second user and mount namespace, which locks every mount
  of B's (a run running as root can then neither unmount the tmpfs nor make a
  mount writable again), joins a fresh session keyring and execs the property.

Each writes what happened to a pipe the runner reads: `E<text>` (no isolation:
the property did not run), `X<text>` (exec failed) or `S<wait status>`. B is not
dumpable, so the run cannot reach that pipe through /proc. The namespaces, their
tmpfs and every file on them die with the run's last process.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import platform
import signal
import socket
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
_PR_SET_DUMPABLE = 4
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_SYS_MOUNT_SETATTR = 442  # the same number on every architecture (Linux >= 5.12)
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}
_KEYCTL_JOIN_SESSION_KEYRING = 1
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1

# The exit code recorded for a run that did not happen, and for one whose exec failed.
NOT_RUN = 126
NOT_EXECUTED = 127


class _MountAttr(ctypes.Structure):
    _fields_ = (
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    )


@dataclass(frozen=True)
class Plan:
    """What one run needs: its command, environment, directories and output."""

    executable: str
    env: dict[str, str]
    cwd: str
    directories: tuple[str, ...]  # made on the run's own /tmp before it starts
    log_fd: int
    args: tuple[str, ...] = ()  # after argv[0]


@dataclass(frozen=True)
class Ended:
    exit_code: int  # -N when killed by signal N
    isolated: bool
    problem: str = ""  # why the run was not isolated, or why its exec failed


def network_interfaces() -> tuple[str, ...]:
    """The network interfaces this process sees (its network namespace's)."""
    try:
        return tuple(sorted(name for _, name in socket.if_nameindex()))
    except OSError as error:
        return (f"<unknown: {error.strerror}>",)


def network_blocked(interfaces: tuple[str, ...]) -> bool:
    """No interface but loopback: the action runs in a sandbox with no network."""
    return set(interfaces) <= {"lo"}


_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _enter_user_namespace(flags: int) -> None:
    """Unshare with a new user namespace in which this process keeps its uid and gid."""
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc.unshare(_CLONE_NEWUSER | flags), "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def _mount(source: str, target: str, kind: str, flags: int, data: str = "") -> None:
    # fsencode: a name in /tmp need not be UTF-8.
    result = _libc.mount(
        os.fsencode(source), os.fsencode(target), kind.encode(), flags, data.encode() or None
    )
    if result < 0:
        code = ctypes.get_errno()
        # FileNotFoundError for ENOENT, so a caller can tell a vanished source apart.
        raise OSError(code, f"mount {kind or 'bind'} on {target}: {os.strerror(code)}")


def _read_only_everywhere() -> None:
    attr = _MountAttr(attr_set=_MOUNT_ATTR_RDONLY)
    long = ctypes.c_long  # syscall(2) reads every argument as a long
    result = _libc.syscall(
        long(_SYS_MOUNT_SETATTR),
        long(_AT_FDCWD),
        b"/",
        long(_AT_RECURSIVE),
        ctypes.byref(attr),
        long(ctypes.sizeof(attr)),
    )
    _check(result, "mount_setattr / read-only (needs Linux 5.12 or later)")


# What a run may write to, each its own fresh tmpfs. A Bazel output base may live
# there, so what was there stays visible, read-only, bound into the new tmpfs.
_PRIVATE = ("/tmp", "/dev/shm")
_MS_BIND = 0x1000


def _private_tmpfs(path: str, reserved: set[str]) -> None:
    """A fresh tmpfs on `path`, with each entry that was there bound back read-only.

    Only new names are writable, and they die with the run. An overlay would be one
    mount, not one per entry, but the kernel refuses it over a file system mounted
    below (linux-sandbox's execroot, with the output base in /tmp), and it makes
    what was there writable, in the run's own copy: a run could then rewrite a
    fixture or a golden file of a workspace in /tmp before its test reads it.
    """
    below = os.open(path, os.O_PATH | os.O_DIRECTORY)
    try:
        names = [name for name in os.listdir(path) if name not in reserved]
        _mount("tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777")
        for name in names:
            source, target = f"/proc/self/fd/{below}/{name}", f"{path}/{name}"
            try:
                mode = os.lstat(source).st_mode
                if stat.S_ISLNK(mode):
                    os.symlink(os.readlink(source), target)
                    continue
                if stat.S_ISDIR(mode):
                    os.mkdir(target, 0o700)
                else:
                    os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o600))
                # A recursive bind of read-only mounts is read-only; mounts below come along.
                _mount(source, target, "", _MS_BIND | _MS_REC)
            except FileNotFoundError:
                continue  # gone since it was listed: other processes share this /tmp
    finally:
        os.close(below)


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", _IFF_UP))


def _fresh_session_keyring() -> None:
    number = _SYS_KEYCTL.get(platform.machine())
    if number is None:
        raise OSError(errno.ENOSYS, f"no keyctl number known for {platform.machine()}")
    long = ctypes.c_long
    if _libc.syscall(long(number), long(_KEYCTL_JOIN_SESSION_KEYRING), None) < 0:
        code = ctypes.get_errno()
        if code != errno.ENOSYS:  # a kernel without keyrings has none to share
            raise OSError(code, f"keyctl join session keyring: {os.strerror(code)}")


def _report(pipe: int, message: str) -> None:
    # One short line in one write: atomic on a pipe, so messages never interleave.
    line = message.replace("\n", " ")[:2000] + "\n"
    with contextlib.suppress(OSError):
        os.write(pipe, line.encode("utf-8", "backslashreplace"))


def _default_signals() -> None:
    # Python ignores SIGPIPE and SIGXFSZ and handles SIGINT; a run gets the defaults.
    for number in (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_DFL)


def _run(plan: Plan, pipe: int) -> None:
    """C: lock B's mounts behind a second user namespace, then exec the property."""
    try:
        os.setsid()
        # Inherited from A; a process that is not dumpable cannot write its own uid map.
        _check(_libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
        _enter_user_namespace(_CLONE_NEWNS)
        _fresh_session_keyring()
        os.chdir(plan.cwd)
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(plan.log_fd, 1)
        os.dup2(plan.log_fd, 2)
    except BaseException as error:  # a forked child must never return
        _report(pipe, f"E{error}")
        os._exit(NOT_RUN)
    try:
        os.closerange(3, pipe)  # the pipe itself is close-on-exec
        os.closerange(pipe + 1, os.sysconf("SC_OPEN_MAX"))
        os.execve(plan.executable, [plan.executable, *plan.args], plan.env)
    except BaseException as error:
        message = f"cannot execute {plan.executable}: {error}"
        _report(pipe, "X" + message)
        with contextlib.suppress(OSError):
            os.write(2, f"agent_gate runner: {message}\n".encode("utf-8", "backslashreplace"))
    os._exit(NOT_EXECUTED)


def _init(plan: Plan, pipe: int) -> None:
    """B: PID 1 of the run's namespaces; builds its file system, then waits for it."""
    try:
        _mount("none", "/", "", _MS_REC | _MS_PRIVATE)
        _read_only_everywhere()
        for path in _PRIVATE:
            if os.path.isdir(path):
                reserved = {
                    Path(directory).relative_to(path).parts[0]
                    for directory in plan.directories
                    if Path(directory).is_relative_to(path)
                }
                _private_tmpfs(path, reserved)
        _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        _loopback_up()
        for directory in plan.directories:
            os.makedirs(directory, exist_ok=True)
        child = os.fork()
    except BaseException as error:
        _report(pipe, f"E{error}")
        os._exit(NOT_RUN)
    if child == 0:
        _run(plan, pipe)
    try:
        os.close(plan.log_fd)
        while True:  # as PID 1 it also reaps every orphan of the run
            pid, status = os.wait()
            if pid == child:
                _report(pipe, f"S{status}")
                break
    finally:
        os._exit(0)  # the kernel now kills what is left in the namespace


def _outer(plan: Plan, pipe: int) -> None:
    """A: the run's session and namespaces, then B in them."""
    try:
        _default_signals()
        os.setsid()
        flags = _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWIPC | _CLONE_NEWNET
        _enter_user_namespace(flags)
        _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
        child = os.fork()
    except BaseException as error:
        _report(pipe, f"E{error}")
        os._exit(NOT_RUN)
    if child == 0:
        _init(plan, pipe)
    try:
        os.waitpid(child, 0)
    finally:
        os._exit(0)


def start(plan: Plan) -> tuple[int, int]:
    """Fork the run; return its pid (also its process group) and the pipe to read."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            _outer(plan, write_end)
        finally:
            os._exit(NOT_RUN)
    os.close(write_end)
    return pid, read_end


def finish(pid: int, pipe: int) -> Ended:
    """Wait for a run started by `start` and say how it ended."""
    _, status = os.waitpid(pid, 0)
    os.set_blocking(pipe, False)
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(pipe, 1 << 16):
            chunks.append(chunk)
    os.close(pipe)
    first = b"".join(chunks).decode("utf-8", "replace").partition("\n")[0]
    kind, text = first[:1], first[1:]
    if kind == "E":
        return Ended(NOT_RUN, isolated=False, problem=text)
    if kind == "X":
        return Ended(NOT_EXECUTED, isolated=True, problem=text)
    if kind == "S":
        return Ended(os.waitstatus_to_exitcode(int(text)), isolated=True)
    # Killed before the run's end was told (its timeout): how the chain died.
    code = os.waitstatus_to_exitcode(status)
    return Ended(code if code < 0 else -signal.SIGKILL, isolated=True)
