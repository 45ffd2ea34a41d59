"""The first process inside a test's new namespaces (grader/sandbox.py): sets up its view of
the file system, then becomes the test. Self-contained, run as a script by path:

    sandbox_init.py N PATH MODE ... [HIDDEN ...] -- COMMAND ...

N visible paths with their modes (rw or ro), then the folders to hide, then the command.
"""

import os
import subprocess
import sys


def mount(*args: str, fd: int | None = None) -> None:
    subprocess.run(["mount", "--no-canonicalize", *args], check=True, pass_fds=() if fd is None else (fd,))


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
    mount("-t", "tmpfs", "-o", "mode=1777,size=1g,nosuid,nodev", "kit-tmp", "/tmp")
    if os.path.isdir("/dev/shm"):
        mount("-t", "tmpfs", "-o", "mode=1777,size=256m,nosuid,nodev", "kit-shm", "/dev/shm")
    covered = []
    for folder in hidden:
        if os.path.isdir(folder) and folder not in ("/", "/tmp"):  # /tmp is fresh already
            mount("-t", "tmpfs", "-o", "size=64k,mode=0755", "kit-hidden", folder)
            covered.append(folder)
    # Parents first: bound after its folder, a parent would cover it (a test's folder lies in
    # its submission's, which is read-only).
    held.sort(key=lambda entry: len(entry[0]))
    for path, _, fd in held:
        os.makedirs(path, exist_ok=True)  # on a fresh /tmp or a cover: an empty mount point
        mount("--bind", f"/proc/self/fd/{fd}", path, fd=fd)
        os.close(fd)
    for folder in covered:
        mount("-o", "remount,ro", folder)
    mount("-o", "remount,bind,ro", "/")
    for path, mode, _ in held:
        if mode != "rw":
            mount("-o", "remount,bind,ro", path)
    os.chdir(visible[0][0] if visible else "/")
    os.execvp(command[0], command)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (OSError, ValueError, subprocess.CalledProcessError) as error:
        print(f"kit sandbox: could not set up the test's file system: {error}", file=sys.stderr)
        sys.exit(125)
