"""The first process inside a test's new namespaces (grader/sandbox.py): sets up its view of
the file system, then becomes the test. Self-contained, run as a script by path:

    sandbox_init.py N PATH MODE ... [HIDDEN ...] -- COMMAND ...

N visible paths with their modes (rw or ro), then the folders to hide, then the command.

The mounts are mount(2) calls through ctypes, not runs of util-linux `mount`: a test process is
started for every test of every submission, and the dozen `mount` processes this takes cost
about 20 ms of its 30 ms set-up (measured on the 2-core machine), the largest part of grading
a class without a GPU. The calls are the ones `mount` makes for the same options.
"""

import ctypes
import os
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_RELATIME = 1 << 21
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


def main(argv: list[str]) -> None:
    count = int(argv[0])
    visible = [(argv[1 + 2 * i], argv[2 + 2 * i]) for i in range(count)]
    rest = argv[1 + 2 * count :]
    split = rest.index("--")
    hidden, command = rest[:split], rest[split + 1 :]
    # Hold every visible path open: they may lie under /tmp or a hidden folder, and are bound
    # back from these descriptors once those are covered.
    held = [(path, mode, os.open(path, os.O_RDONLY | os.O_DIRECTORY)) for path, mode in visible]
    # A fresh /tmp and /dev/shm: nothing left there by an earlier test, or for a later one.
    tmpfs("kit-tmp", "/tmp", "mode=1777,size=1g")
    if os.path.isdir("/dev/shm"):
        tmpfs("kit-shm", "/dev/shm", "mode=1777,size=256m")
    covered = []
    for folder in hidden:
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
    for folder in covered:
        remount_read_only(folder, bind=False)
    remount_read_only("/", bind=True)
    for path, mode, _ in held:
        if mode != "rw":
            remount_read_only(path, bind=True)
    os.chdir(visible[0][0] if visible else "/")
    os.execvp(command[0], command)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (OSError, ValueError) as error:
        print(f"kit sandbox: could not set up the test's file system: {error}", file=sys.stderr)
        sys.exit(125)
