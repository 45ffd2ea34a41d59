/* The first process inside a test's new namespaces (grader/confine/sandbox.py): builds its view of
 * the file system, then becomes the test.
 *
 *     kit_sandbox_init [--gpu-node nvidiaK] N PATH MODE ... [HIDDEN ...] -- COMMAND ...
 *
 * With --gpu-node, /dev holds that GPU's node alone of the machine's /dev/nvidia0, nvidia1, ...
 * (the control, UVM and capability nodes stay), and the command gets CUDA_VISIBLE_DEVICES=0: the
 * only GPU it can open is its lane's. CUDA_VISIBLE_DEVICES alone is the program's choice, and a
 * process that can open every GPU's node initializes them all when CUDA starts: on a node of
 * four, eight such processes at once started at half the rate of processes that saw one GPU
 * (bench/RESULTS.md, "Every GPU of a node").
 *
 * N visible paths with their modes (rw, ro, or tmpfs:SIZE: an empty, writable file system of
 * at most SIZE bytes in its place, e.g. tmpfs:256m, whose pages count in the test's memory),
 * then the folders to hide, then the command.
 *
 * The view is an allowlist: a new, empty root holding only the system's folders (SYSTEM: the
 * programs, libraries, toolkits and their configuration), a fresh /tmp and /dev with only the
 * device nodes a CUDA test uses, /proc, /sys, and the visible paths at their own places. Nothing
 * else of the machine is there: not the kit's checkout or its history, not the class's folder,
 * not other runs, not home folders. The hidden folders are covered too, should one lie inside a
 * system folder.
 *
 * C, not Python: a test process is started for every test of every submission, and starting
 * an interpreter (and ctypes, for mount(2)) cost about 20 ms of the 33 ms each confined process
 * took to start on the 2-core machine, 4000 processes for the sample class. The grader compiles
 * this file with the host C compiler the first time it confines anything
 * (grader/confine/sandbox.py).
 *
 * Before it becomes the test, this process gives up every privilege: all capabilities (the
 * bounding set too, and root's on exec), and no_new_privs, so no setuid program gives them back.
 * Without CAP_SYS_ADMIN a test cannot unmount or remount anything. Where the grader runs as root
 * the test still has uid 0, which owns most files, so what uid 0 could write without a
 * capability is out of reach too: every mount read-only (mount_setattr, recursively) but the
 * test's folder, /tmp, /dev/shm, the device nodes and /proc, whose system-wide files stay
 * read-only (CUDA needs /proc writable); /dev only the device nodes a CUDA test uses (a
 * read-only mount does not stop writes to a disk's node); /sys/fs/cgroup covered (a test's
 * cgroup would be left by writing its pid elsewhere); /run absent (daemons' sockets).
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

/* The new root is built here (a fresh file system mounted over the old /tmp), then made "/". */
#define ROOT "/tmp"

/* The system's folders, bound read-only into the new root where they exist (links, as on a
 * merged-/usr system, copied as links): what compilers, CUDA, compute-sanitizer, ncu and Python
 * read. /usr holds the toolkit (/usr/local/cuda) and, on the GPU image, the driver's libraries
 * (/usr/local/nvidia); /opt its host compiler and Python. */
static const char *const SYSTEM[] = {"/usr",   "/bin",    "/sbin", "/lib", "/lib32",
                                     "/lib64", "/libx32", "/etc",  "/opt", "/sys"};

/* `path` inside the new root, before it becomes "/". */
static const char *rooted(const char *path) {
  static char buffer[4][4096];
  static int next = 0;
  char *out = buffer[next++ % 4];
  if (snprintf(out, sizeof buffer[0], "%s%s", ROOT, path) >= (int)sizeof buffer[0]) {
    errno = ENAMETOOLONG;
    fail("path %s", path);
  }
  return out;
}

/* Whether `name` is one GPU's node, nvidia followed by its minor number only. */
static int is_gpu_node(const char *name) {
  if (strncmp(name, "nvidia", 6) != 0 || name[6] == '\0') return 0;
  for (const char *c = name + 6; *c != '\0'; ++c)
    if (*c < '0' || *c > '9') return 0;
  return 1;
}

/* A fresh /dev in the new root: the nodes above and NVIDIA's (of the GPUs' own nodes only
 * `gpu_node`, when not NULL), the usual links, and a fresh /dev/shm; fills `nodes` (their names)
 * and returns how many. */
static size_t minimal_dev(struct node *nodes, const char *gpu_node) {
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
    if (gpu_node != NULL && is_gpu_node(entry->d_name) && strcmp(entry->d_name, gpu_node) != 0)
      continue;
    if (count == MAX_NODES) {
      errno = E2BIG;
      fail("more than %d device nodes", MAX_NODES);
    }
    snprintf(nodes[count++].name, sizeof nodes->name, "%s", entry->d_name);
  }
  closedir(dev);
  if (gpu_node != NULL) {
    int found = 0;
    for (size_t i = first_nvidia; i < count; ++i) found |= strcmp(nodes[i].name, gpu_node) == 0;
    if (!found) {
      errno = ENOENT;
      fail("the lane's GPU node /dev/%s", gpu_node);
    }
  }
  qsort(nodes + first_nvidia, count - first_nvidia, sizeof *nodes, by_name);
  for (size_t i = 0; i < count; ++i) {
    snprintf(path, sizeof path, "/dev/%.255s", nodes[i].name);
    nodes[i].dir = is_dir(path);
    nodes[i].fd = open(path, O_PATH);
    if (nodes[i].fd < 0) fail("opening %s", path);
  }
  if (mkdir(rooted("/dev"), 0755) != 0) fail("mkdir /dev");
  tmpfs("kit-dev", rooted("/dev"), "mode=0755,size=64k");
  for (size_t i = 0; i < count; ++i) {
    snprintf(path, sizeof path, ROOT "/dev/%.255s", nodes[i].name);
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
    if (symlink(links[i][1], rooted(links[i][0])) != 0) fail("symlink %s", links[i][0]);
  if (mkdir(rooted("/dev/shm"), 0755) != 0) fail("mkdir /dev/shm");
  tmpfs("kit-shm", rooted("/dev/shm"), "mode=1777,size=256m");
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
  const char *gpu_node = NULL;
  if (argc > 2 && strcmp(argv[1], "--gpu-node") == 0) {
    gpu_node = argv[2];
    if (!is_gpu_node(gpu_node)) {
      errno = EINVAL;
      fail("--gpu-node %s: not a GPU's node name such as nvidia0", gpu_node);
    }
    argv += 2;
    argc -= 2;
  }
  if (argc < 2) {
    errno = EINVAL;
    fail(
        "usage: kit_sandbox_init [--gpu-node nvidiaK] N PATH MODE ... [HIDDEN ...] -- COMMAND ...");
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

  static struct node nodes[MAX_NODES];
  /* The new root: an empty file system over /tmp (so the machine's /tmp is gone from this view
   * too; visible paths under it are bound back from the descriptors held above). */
  tmpfs("kit-root", ROOT, "mode=0755,size=1m");
  for (size_t i = 0; i < sizeof SYSTEM / sizeof SYSTEM[0]; ++i) {
    const char *folder = SYSTEM[i];
    if (is_link(folder)) {
      char target[4096];
      ssize_t length = readlink(folder, target, sizeof target - 1);
      if (length < 0) fail("readlink %s", folder);
      target[length] = '\0';
      if (symlink(target, rooted(folder)) != 0) fail("symlink %s", folder);
    } else if (is_dir(folder)) {
      if (mkdir(rooted(folder), 0755) != 0) fail("mkdir %s", folder);
      do_mount(folder, rooted(folder), NULL, MS_BIND | MS_REC, NULL);
    }
  }
  /* A test's cgroup would be left by writing its pid elsewhere. */
  if (is_dir(rooted("/sys/fs/cgroup")))
    do_mount("kit-hidden", rooted("/sys/fs/cgroup"), "tmpfs", 0, "size=4k,mode=0755");
  if (mkdir(rooted("/proc"), 0555) != 0) fail("mkdir /proc");
  do_mount("/proc", rooted("/proc"), NULL, MS_BIND | MS_REC,
           NULL); /* unshare's, of this PID namespace */
  size_t node_count = minimal_dev(nodes, gpu_node);
  /* The lane's GPU is the only one this view holds: CUDA numbers it 0. */
  if (gpu_node != NULL && setenv("CUDA_VISIBLE_DEVICES", "0", 1) != 0) fail("setenv");
  /* A fresh /tmp: nothing left there by an earlier test, or for a later one. */
  if (mkdir(rooted("/tmp"), 01777) != 0) fail("mkdir /tmp");
  tmpfs("kit-tmp", rooted("/tmp"), "mode=1777,size=1g");

  /* Hidden folders that lie inside a system folder (the rest are not in the view at all); never
   * "/" or the fresh /tmp (the system's temporary folder holds a grading run's work root). */
  for (int i = 0; i < hidden_count; ++i)
    if (hidden[i][0] == '/' && strcmp(hidden[i], "/") != 0 && strcmp(hidden[i], "/tmp") != 0 &&
        is_dir(rooted(hidden[i])))
      do_mount("kit-hidden", rooted(hidden[i]), "tmpfs", 0, "size=64k,mode=0755");
  /* Parents first: bound after its folder, a parent would cover it (a test's folder lies in
   * its submission's, which is read-only). Insertion sort by length: stable, and few paths. */
  for (int i = 1; i < count; ++i)
    for (int j = i; j > 0 && strlen(held[j - 1].path) > strlen(held[j].path); --j) {
      struct visible swap = held[j];
      held[j] = held[j - 1];
      held[j - 1] = swap;
    }
  for (int i = 0; i < count; ++i) {
    make_dirs(rooted(held[i].path)); /* in the new root or a cover: an empty mount point */
    if (held[i].tmpfs_size != NULL) {
      char options[96];
      snprintf(options, sizeof options, "mode=0777,size=%.64s", held[i].tmpfs_size);
      do_mount("kit-work", rooted(held[i].path), "tmpfs", 0, options);
    } else {
      /* With what is mounted below it, so a path such as /usr keeps its view; not /tmp, on
       * which the new root itself is mounted. */
      bind_from_fd(held[i].fd, rooted(held[i].path), strcmp(held[i].path, ROOT) != 0 ? MS_REC : 0);
    }
  }

  /* The new root becomes "/", and the machine's is let go of: stacked under the new one by
   * pivot_root(".", "."), then detached. */
  if (chdir(ROOT) != 0) fail("chdir to the new root");
  if (syscall(SYS_pivot_root, ".", ".") != 0) fail("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) fail("detaching the machine's root");
  if (chdir("/") != 0) fail("chdir /");

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
  } else { /* a kernel older than 5.12: each mount made here (not their submounts) */
    for (size_t i = 0; i < sizeof SYSTEM / sizeof SYSTEM[0]; ++i)
      if (is_dir(SYSTEM[i]) && !is_link(SYSTEM[i])) remount_read_only(SYSTEM[i], 1);
    for (int i = 0; i < count; ++i)
      if (!held[i].writable) remount_read_only(held[i].path, 1);
    remount_read_only("/", 0);
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
