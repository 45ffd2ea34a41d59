"""The first process inside a test's new namespaces (grader/sandbox.py): sets up its view of
the file system, then becomes the test. Self-contained, run as a script by path:

    sandbox_init.py N PATH MODE ... [HIDDEN ...] -- COMMAND ...

N visible paths with their modes (rw or ro), then the folders to hide, then the command.

The mounts are mount(2) calls through ctypes, not runs of util-linux `mount`: a test process is
started for every test of every submission, and the dozen `mount` processes this takes cost
about 20 ms of its 30 ms set-up (measured on the 2-core machine), the largest part of grading
a class without a GPU. The calls are the ones `mount` makes for the same options.

Before it becomes the test, this process gives up every privilege: all capabilities (the
bounding set too, and root's on exec), and no_new_privs, so no setuid program gives them back.
Without CAP_SYS_ADMIN a test cannot unmount what hides solutions/ or remount anything writable.
Where the grader runs as root the test still has uid 0, which owns most files, so what uid 0
could write without a capability is out of reach too: every mount read-only (mount_setattr,
recursively) but the test's folder, /tmp, /dev/shm, the device nodes and /proc, whose
system-wide files stay read-only (CUDA needs /proc writable); /dev only the device nodes a CUDA test
uses (a read-only mount does not stop writes to a disk's node); /sys/fs/cgroup and /run hidden
(a test's cgroup would be left by writing its pid elsewhere; /run holds daemons' sockets).
"""

import ctypes
import os
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_RELATIME, MS_REC = 1 << 21, 16384
# A remount must keep the flags the mount already has: in a user namespace those set by the
# parent namespace are locked, and a remount that would clear them is refused.
KEPT_FLAGS = {
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: MS_NOATIME,
    os.ST_NODIRATIME: MS_NODIRATIME,
    os.ST_RELATIME: MS_RELATIME,
}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.syscall.restype = ctypes.c_long


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def c(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    if _libc.mount(c(source), c(target), c(fstype), flags, c(data)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount of {target} ({fstype or 'bind'}): {os.strerror(error)}")


def tmpfs(name: str, target: str, options: str) -> None:
    mount(name, target, "tmpfs", MS_NOSUID | MS_NODEV, options)


def remount_read_only(target: str, bind: bool) -> None:
    present = os.statvfs(target).f_flag
    kept = 0
    for statvfs_flag, mount_flag in KEPT_FLAGS.items():
        if present & statvfs_flag:
            kept |= mount_flag
    mount(None, target, None, MS_REMOUNT | MS_RDONLY | (MS_BIND if bind else 0) | kept)


# mount_setattr(2) (Linux 5.12): read-only for a whole tree in one call.
SYS_MOUNT_SETATTR = 442  # the same number on x86-64 and arm64
AT_RECURSIVE, MOUNT_ATTR_RDONLY = 0x8000, 0x1


class _MountAttr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("attr_set", "attr_clr", "propagation", "userns_fd")]


def set_read_only(target: str, read_only: bool, recursive: bool) -> bool:
    """False where the kernel has no mount_setattr (the caller falls back)."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY if read_only else 0, 0 if read_only else MOUNT_ATTR_RDONLY, 0, 0)
    flags = AT_RECURSIVE if recursive else 0
    AT_FDCWD = -100
    args = (ctypes.c_long(AT_FDCWD), ctypes.c_char_p(os.fsencode(target)), ctypes.c_long(flags))
    if _libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), *args, ctypes.byref(attr), ctypes.c_long(32)) != 0:
        error = ctypes.get_errno()
        if error == 38:  # ENOSYS
            return False
        raise OSError(error, f"mount_setattr of {target}: {os.strerror(error)}")
    return True


# What of /proc is system-wide and stays read-only (Docker's list, and NVIDIA's driver files).
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/driver")
# The device nodes a CUDA test, compute-sanitizer or ncu opens; the rest of /dev is not there.
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")


def minimal_dev() -> list[str]:
    """A fresh /dev: the nodes above and NVIDIA's (bound from descriptors opened before /dev is
    covered), the usual links, and a fresh /dev/shm; returns the nodes' mount points."""
    names = [name for name in DEVICES if os.path.exists(f"/dev/{name}")]
    names += sorted(name for name in os.listdir("/dev") if name.startswith("nvidia"))
    # (glob and stat are not imported: their imports cost a few ms of every test's start)
    held = [(name, os.path.isdir(f"/dev/{name}"), os.open(f"/dev/{name}", os.O_PATH)) for name in names]
    tmpfs("kit-dev", "/dev", "mode=0755,size=64k")
    for name, is_dir, fd in held:
        target = f"/dev/{name}"
        if is_dir:
            os.mkdir(target)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o600))  # a mount point for the node
        mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | (MS_REC if is_dir else 0))
        os.close(fd)
    for link, to in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(to, f"/dev/{link}")
    os.mkdir("/dev/shm")
    tmpfs("kit-shm", "/dev/shm", "mode=1777,size=256m")
    return [f"/dev/{name}" for name, _, _ in held]


PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 24, 28, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# noroot and no_setuid_fixup set, keep_caps clear, each locked: uid 0 gets no capability on exec.
SECURE_BITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_privileges() -> None:
    """Every capability gone for good, for this process and whatever it executes."""

    def check(result: int, what: str) -> None:
        if result != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"{what}: {os.strerror(error)}")

    check(_libc.prctl(PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0), "securebits")
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for cap in range(last + 1):
        check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "dropping the bounding set")
    check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "ambient capabilities")
    check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3: two data structs
    data = (_CapData * 2)()
    check(_libc.capset(ctypes.byref(header), data), "capset")


def main(argv: list[str]) -> None:
    count = int(argv[0])
    visible = [(argv[1 + 2 * i], argv[2 + 2 * i]) for i in range(count)]
    rest = argv[1 + 2 * count :]
    split = rest.index("--")
    hidden, command = rest[:split], rest[split + 1 :]
    # Hold every visible path open: they may lie under /tmp or a hidden folder, and are bound
    # back from these descriptors once those are covered.
    held = [(path, mode, os.open(path, os.O_RDONLY | os.O_DIRECTORY)) for path, mode in visible]
    # A fresh /tmp and /dev (with a fresh /dev/shm): nothing left there by an earlier test, or
    # for a later one.
    tmpfs("kit-tmp", "/tmp", "mode=1777,size=1g")
    nodes = minimal_dev()
    covered = []
    for folder in (*hidden, "/sys/fs/cgroup", "/run", "/var/run"):
        if os.path.islink(folder):
            continue  # /var/run is a link to /run on most systems
        if os.path.isdir(folder) and folder not in ("/", "/tmp"):  # /tmp is fresh already
            mount("kit-hidden", folder, "tmpfs", 0, "size=64k,mode=0755")
            covered.append(folder)
    # Parents first: bound after its folder, a parent would cover it (a test's folder lies in
    # its submission's, which is read-only).
    held.sort(key=lambda entry: len(entry[0]))
    for path, _, fd in held:
        os.makedirs(path, exist_ok=True)  # on a fresh /tmp or a cover: an empty mount point
        mount(f"/proc/self/fd/{fd}", path, None, MS_BIND)
        os.close(fd)
    if set_read_only("/", True, recursive=True):
        # Every mount read-only, then writable again: the test's own folder, /tmp, /dev/shm, the
        # device nodes, and /proc, without which CUDA does not start ("operation not supported
        # on this OS", seen on the H100) but with its system-wide files read-only, as Docker
        # keeps them: sysctls, the SysRq trigger (uid 0 may write both without a capability).
        for path in [path for path, mode, _ in held if mode == "rw"] + ["/tmp", "/dev/shm", *nodes, "/proc"]:
            set_read_only(path, False, recursive=False)
    else:  # a kernel older than 5.12: the root and the mounts made here
        for folder in covered:
            remount_read_only(folder, bind=False)
        remount_read_only("/", bind=True)
        for path, mode, _ in held:
            if mode != "rw":
                remount_read_only(path, bind=True)
    for path in PROC_READ_ONLY:  # on either path: /proc itself is writable on both
        if os.path.exists(path):
            mount(path, path, None, MS_BIND | MS_REC)
            if not set_read_only(path, True, recursive=True):
                remount_read_only(path, bind=True)
    os.chdir(visible[0][0] if visible else "/")
    drop_privileges()
    os.execvp(command[0], command)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (OSError, ValueError) as error:
        print(f"kit sandbox: could not set up the test's file system: {error}", file=sys.stderr)
        sys.exit(125)
