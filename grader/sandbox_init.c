/* The first process inside a test's new namespaces (grader/sandbox.py): sets up its view of
 * the file system, then becomes the test.
 *
 *     kit_sandbox_init N PATH MODE ... [HIDDEN ...] -- COMMAND ...
 *
 * N visible paths with their modes (rw, ro, or tmpfs:SIZE: an empty, writable file system of
 * at most SIZE bytes in its place, e.g. tmpfs:256m, whose pages count in the test's memory),
 * then the folders to hide, then the command.
 *
 * C, not Python: a test process is started for every test of every submission, and starting
 * an interpreter (and ctypes, for mount(2)) cost about 20 ms of the 33 ms each confined process
 * took to start on the 2-core machine, 4000 processes for the sample class. The grader compiles
 * this file with the host C compiler the first time it confines anything (grader/sandbox.py).
 *
 * Before it becomes the test, this process gives up every privilege: all capabilities (the
 * bounding set too, and root's on exec), and no_new_privs, so no setuid program gives them back.
 * Without CAP_SYS_ADMIN a test cannot unmount what hides solutions/ or remount anything writable.
 * Where the grader runs as root the test still has uid 0, which owns most files, so what uid 0
 * could write without a capability is out of reach too: every mount read-only (mount_setattr,
 * recursively) but the test's folder, /tmp, /dev/shm, the device nodes and /proc, whose
 * system-wide files stay read-only (CUDA needs /proc writable); /dev only the device nodes a CUDA
 * test uses (a read-only mount does not stop writes to a disk's node); /sys/fs/cgroup and /run
 * hidden (a test's cgroup would be left by writing its pid elsewhere; /run holds daemons'
 * sockets).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { EXIT_SETUP = 125 }; /* the grader reads this as "the sandbox failed", not the test */

static _Noreturn void fail(const char *format, ...) {
  int error = errno;
  va_list args;
  va_start(args, format);
  fputs("kit sandbox: could not set up the test's file system: ", stderr);
  vfprintf(stderr, format, args);
  fprintf(stderr, ": %s\n", strerror(error));
  va_end(args);
  exit(EXIT_SETUP);
}

static void do_mount(const char *source, const char *target, const char *fstype,
                     unsigned long flags, const char *data) {
  if (mount(source, target, fstype, flags, data) != 0)
    fail("mount of %s (%s)", target, fstype ? fstype : "bind");
}

static void tmpfs(const char *name, const char *target, const char *options) {
  do_mount(name, target, "tmpfs", MS_NOSUID | MS_NODEV, options);
}

static void bind_from_fd(int fd, const char *target, unsigned long extra) {
  char source[64];
  snprintf(source, sizeof source, "/proc/self/fd/%d", fd);
  do_mount(source, target, NULL, MS_BIND | extra, NULL);
  close(fd);
}

/* A remount must keep the flags the mount already has: in a user namespace those set by the
 * parent namespace are locked, and a remount that would clear them is refused. */
static void remount_read_only(const char *target, int bind) {
  struct statvfs present;
  if (statvfs(target, &present) != 0) fail("statvfs of %s", target);
  static const unsigned long kept[][2] = {
      {ST_NOSUID, MS_NOSUID},   {ST_NODEV, MS_NODEV},           {ST_NOEXEC, MS_NOEXEC},
      {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME}, {ST_RELATIME, MS_RELATIME},
  };
  unsigned long flags = MS_REMOUNT | MS_RDONLY | (bind ? MS_BIND : 0);
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; ++i)
    if (present.f_flag & kept[i][0]) flags |= kept[i][1];
  do_mount(NULL, target, NULL, flags, NULL);
}

/* mount_setattr(2) (Linux 5.12): read-only for a whole tree in one call. Returns 0 where the
 * kernel has none (the caller falls back). */
enum { SYS_MOUNT_SETATTR = 442 }; /* the same number on x86-64 and arm64 */
static int set_read_only(const char *target, int read_only, int recursive) {
  struct {
    uint64_t attr_set, attr_clr, propagation, userns_fd;
  } attr = {read_only ? 0x1u : 0u, read_only ? 0u : 0x1u, 0, 0}; /* MOUNT_ATTR_RDONLY */
  if (syscall(SYS_MOUNT_SETATTR, AT_FDCWD, target, recursive ? 0x8000 /* AT_RECURSIVE */ : 0, &attr,
              sizeof attr) != 0) {
    if (errno == ENOSYS) return 0;
    fail("mount_setattr of %s", target);
  }
  return 1;
}

static int exists(const char *path) {
  struct stat info;
  return stat(path, &info) == 0;
}

static int is_dir(const char *path) {
  struct stat info;
  return stat(path, &info) == 0 && S_ISDIR(info.st_mode);
}

static int is_link(const char *path) {
  struct stat info;
  return lstat(path, &info) == 0 && S_ISLNK(info.st_mode);
}

static void make_dirs(const char *path) {
  char partial[4096];
  size_t length = strlen(path);
  if (length >= sizeof partial) {
    errno = ENAMETOOLONG;
    fail("mkdir %s", path);
  }
  for (size_t i = 1; i <= length; ++i) {
    if (path[i] != '/' && path[i] != '\0') continue;
    memcpy(partial, path, i);
    partial[i] = '\0';
    if (mkdir(partial, 0755) != 0 && errno != EEXIST) fail("mkdir %s", partial);
  }
}

/* What of /proc is system-wide and stays read-only (Docker's list, and NVIDIA's driver files). */
static const char *const PROC_READ_ONLY[] = {
    "/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs", "/proc/driver"};
/* The device nodes a CUDA test, compute-sanitizer or ncu opens; the rest of /dev is not there. */
static const char *const DEVICES[] = {"null", "zero", "full", "random", "urandom", "tty"};

enum { MAX_NODES = 256 };
struct node {
  char name[256];
  int dir, fd;
};

static int by_name(const void *a, const void *b) {
  return strcmp(((const struct node *)a)->name, ((const struct node *)b)->name);
}

/* A fresh /dev: the nodes above and NVIDIA's (bound from descriptors opened before /dev is
 * covered), the usual links, and a fresh /dev/shm; fills `nodes` (their names) and returns how
 * many. */
static size_t minimal_dev(struct node *nodes) {
  size_t count = 0;
  char path[512];
  for (size_t i = 0; i < sizeof DEVICES / sizeof DEVICES[0]; ++i) {
    snprintf(path, sizeof path, "/dev/%s", DEVICES[i]);
    if (exists(path)) snprintf(nodes[count++].name, sizeof nodes->name, "%s", DEVICES[i]);
  }
  size_t first_nvidia = count;
  DIR *dev = opendir("/dev");
  if (dev == NULL) fail("listing /dev");
  for (struct dirent *entry; (entry = readdir(dev)) != NULL;) {
    if (strncmp(entry->d_name, "nvidia", 6) != 0) continue;
    if (count == MAX_NODES) {
      errno = E2BIG;
      fail("more than %d device nodes", MAX_NODES);
    }
    snprintf(nodes[count++].name, sizeof nodes->name, "%s", entry->d_name);
  }
  closedir(dev);
  qsort(nodes + first_nvidia, count - first_nvidia, sizeof *nodes, by_name);
  for (size_t i = 0; i < count; ++i) {
    snprintf(path, sizeof path, "/dev/%.255s", nodes[i].name);
    nodes[i].dir = is_dir(path);
    nodes[i].fd = open(path, O_PATH);
    if (nodes[i].fd < 0) fail("opening %s", path);
  }
  tmpfs("kit-dev", "/dev", "mode=0755,size=64k");
  for (size_t i = 0; i < count; ++i) {
    snprintf(path, sizeof path, "/dev/%.255s", nodes[i].name);
    if (nodes[i].dir) {
      if (mkdir(path, 0755) != 0) fail("mkdir %s", path);
    } else {
      int made = open(path, O_CREAT | O_WRONLY, 0600); /* a mount point for the node */
      if (made < 0) fail("creating %s", path);
      close(made);
    }
    bind_from_fd(nodes[i].fd, path, nodes[i].dir ? MS_REC : 0);
  }
  static const char *const links[][2] = {
      {"/dev/fd", "/proc/self/fd"},
      {"/dev/stdin", "/proc/self/fd/0"},
      {"/dev/stdout", "/proc/self/fd/1"},
      {"/dev/stderr", "/proc/self/fd/2"},
  };
  for (size_t i = 0; i < sizeof links / sizeof links[0]; ++i)
    if (symlink(links[i][1], links[i][0]) != 0) fail("symlink %s", links[i][0]);
  if (mkdir("/dev/shm", 0755) != 0) fail("mkdir /dev/shm");
  tmpfs("kit-shm", "/dev/shm", "mode=1777,size=256m");
  return count;
}

static void check(long result, const char *what) {
  if (result != 0) fail("%s", what);
}

/* Every capability gone for good, for this process and whatever it executes. */
static void drop_privileges(void) {
  /* noroot and no_setuid_fixup set, keep_caps clear, each locked: uid 0 gets no capability on
   * exec. */
  check(prctl(PR_SET_SECUREBITS, 0x01 | 0x02 | 0x04 | 0x08 | 0x20, 0, 0, 0), "securebits");
  FILE *file = fopen("/proc/sys/kernel/cap_last_cap", "r");
  int last = -1;
  if (file == NULL || fscanf(file, "%d", &last) != 1) fail("reading cap_last_cap");
  fclose(file);
  for (int cap = 0; cap <= last; ++cap)
    check(prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "dropping the bounding set");
  check(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "ambient capabilities");
  check(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs");
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  check(syscall(SYS_capset, &header, data), "capset");
}

struct visible {
  const char *path;
  int writable, fd;
  const char *tmpfs_size; /* tmpfs:SIZE: a fresh file system of that size, not the folder */
};

int main(int argc, char **argv) {
  if (argc < 2) {
    errno = EINVAL;
    fail("usage: kit_sandbox_init N PATH MODE ... [HIDDEN ...] -- COMMAND ...");
  }
  int count = atoi(argv[1]);
  if (count < 0 || 2 + 2 * count > argc) {
    errno = EINVAL;
    fail("bad count of visible paths");
  }
  struct visible *held = calloc((size_t)count + 1, sizeof *held);
  if (held == NULL) fail("memory");
  /* Hold every visible path open: they may lie under /tmp or a hidden folder, and are bound
   * back from these descriptors once those are covered. */
  for (int i = 0; i < count; ++i) {
    held[i].path = argv[2 + 2 * i];
    held[i].writable = strcmp(argv[3 + 2 * i], "rw") == 0;
    if (strncmp(argv[3 + 2 * i], "tmpfs:", 6) == 0) {
      held[i].tmpfs_size = argv[3 + 2 * i] + 6;
      held[i].writable = 1;
    }
    held[i].fd = open(held[i].path, O_RDONLY | O_DIRECTORY);
    if (held[i].fd < 0) fail("opening %s", held[i].path);
  }
  int split = 2 + 2 * count;
  while (split < argc && strcmp(argv[split], "--") != 0) ++split;
  if (split + 1 >= argc) {
    errno = EINVAL;
    fail("no command after --");
  }
  char **hidden = argv + 2 + 2 * count;
  int hidden_count = split - (2 + 2 * count);
  char **command = argv + split + 1;
  const char *first_visible = count > 0 ? held[0].path : "/";

  /* A fresh /tmp and /dev (with a fresh /dev/shm): nothing left there by an earlier test, or
   * for a later one. */
  tmpfs("kit-tmp", "/tmp", "mode=1777,size=1g");
  static struct node nodes[MAX_NODES];
  size_t node_count = minimal_dev(nodes);

  static const char *const always_hidden[] = {"/sys/fs/cgroup", "/run", "/var/run"};
  const char **covered = calloc((size_t)hidden_count + 3, sizeof *covered);
  if (covered == NULL) fail("memory");
  size_t covered_count = 0;
  for (int i = 0; i < hidden_count + 3; ++i) {
    const char *folder = i < hidden_count ? hidden[i] : always_hidden[i - hidden_count];
    if (is_link(folder)) continue; /* /var/run is a link to /run on most systems */
    if (is_dir(folder) && strcmp(folder, "/") != 0 && strcmp(folder, "/tmp") != 0) {
      do_mount("kit-hidden", folder, "tmpfs", 0, "size=64k,mode=0755");
      covered[covered_count++] = folder;
    }
  }
  /* Parents first: bound after its folder, a parent would cover it (a test's folder lies in
   * its submission's, which is read-only). Insertion sort by length: stable, and few paths. */
  for (int i = 1; i < count; ++i)
    for (int j = i; j > 0 && strlen(held[j - 1].path) > strlen(held[j].path); --j) {
      struct visible swap = held[j];
      held[j] = held[j - 1];
      held[j - 1] = swap;
    }
  for (int i = 0; i < count; ++i) {
    make_dirs(held[i].path); /* on a fresh /tmp or a cover: an empty mount point */
    if (held[i].tmpfs_size != NULL) {
      char options[96];
      snprintf(options, sizeof options, "mode=0777,size=%.64s", held[i].tmpfs_size);
      do_mount("kit-work", held[i].path, "tmpfs", 0, options);
    } else {
      bind_from_fd(held[i].fd, held[i].path, 0);
    }
  }
  char path[512];
  if (set_read_only("/", 1, 1)) {
    /* Every mount read-only, then writable again: the test's own folder, /tmp, /dev/shm, the
     * device nodes, and /proc, without which CUDA does not start ("operation not supported
     * on this OS", seen on the H100) but with its system-wide files read-only, as Docker
     * keeps them: sysctls, the SysRq trigger (uid 0 may write both without a capability). */
    for (int i = 0; i < count; ++i)
      if (held[i].writable) set_read_only(held[i].path, 0, 0);
    set_read_only("/tmp", 0, 0);
    set_read_only("/dev/shm", 0, 0);
    for (size_t i = 0; i < node_count; ++i) {
      snprintf(path, sizeof path, "/dev/%.255s", nodes[i].name);
      set_read_only(path, 0, 0);
    }
    set_read_only("/proc", 0, 0);
  } else { /* a kernel older than 5.12: the root and the mounts made here */
    for (size_t i = 0; i < covered_count; ++i) remount_read_only(covered[i], 0);
    remount_read_only("/", 1);
    for (int i = 0; i < count; ++i)
      if (!held[i].writable) remount_read_only(held[i].path, 1);
  }
  for (size_t i = 0; i < sizeof PROC_READ_ONLY / sizeof PROC_READ_ONLY[0]; ++i) {
    const char *target = PROC_READ_ONLY[i]; /* on either path: /proc itself is writable on both */
    if (!exists(target)) continue;
    do_mount(target, target, NULL, MS_BIND | MS_REC, NULL);
    if (!set_read_only(target, 1, 1)) remount_read_only(target, 1);
  }
  if (chdir(first_visible) != 0) fail("chdir %s", first_visible);
  drop_privileges();
  execvp(command[0], command);
  fail("executing %s", command[0]);
}
