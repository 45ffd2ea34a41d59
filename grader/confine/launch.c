/* Starts one process of the grader under its limits (grader/confine/proc.py, run_limited), then
 * becomes the command:
 *
 *     kit_launch [core|fsize|cpu|nofile=SOFT:HARD ...] [cgroup=PROCS_FILE ...] -- COMMAND ...
 *
 * SOFT and HARD are numbers or "inf". Each limit is set with setrlimit; the process then joins
 * each cgroup (writing its pid to the cgroup.procs file named), so that everything the command
 * starts is counted there, and executes the command.
 *
 * C, not Python's preexec_fn: with a preexec_fn, Python forks the whole grader (page tables of
 * a process of 100 MB and more, its threads' locks) and runs Python in the child, about 6 to 12
 * ms of CPU per process on the 2-core machine; without one it uses vfork, under 1 ms. The grader
 * starts some 4500 processes for the sample class. The grader compiles this file with the host
 * C compiler the first time it starts a process (grader/confine/proc.py, launcher()); where it
 * cannot, it falls back to the preexec_fn.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Exit codes of the shell's convention: 126 a set-up that failed, 127 a command not executed. */
enum { EXIT_SETUP = 126, EXIT_NOT_RUN = 127 };

static const struct {
  const char *name;
  int resource;
} kLimits[] = {{"core", RLIMIT_CORE},
               {"fsize", RLIMIT_FSIZE},
               {"cpu", RLIMIT_CPU},
               {"nofile", RLIMIT_NOFILE},
               {"data", RLIMIT_DATA}};

static int parse_value(const char *text, rlim_t *value) {
  if (strcmp(text, "inf") == 0) {
    *value = RLIM_INFINITY;
    return 1;
  }
  char *end = NULL;
  errno = 0;
  unsigned long long parsed = strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') return 0;
  *value = (rlim_t)parsed;
  return 1;
}

/* "name=SOFT:HARD": sets that limit; returns 0 where the name is not a limit's. */
static int set_limit(const char *argument) {
  for (size_t i = 0; i < sizeof kLimits / sizeof kLimits[0]; ++i) {
    size_t length = strlen(kLimits[i].name);
    if (strncmp(argument, kLimits[i].name, length) != 0 || argument[length] != '=') continue;
    char soft_text[32], hard_text[32];
    const char *pair = argument + length + 1;
    const char *colon = strchr(pair, ':');
    struct rlimit limit;
    if (colon == NULL || (size_t)(colon - pair) >= sizeof soft_text ||
        strlen(colon + 1) >= sizeof hard_text) {
      fprintf(stderr, "kit launch: %s is not name=SOFT:HARD\n", argument);
      exit(EXIT_SETUP);
    }
    memcpy(soft_text, pair, (size_t)(colon - pair));
    soft_text[colon - pair] = '\0';
    strcpy(hard_text, colon + 1);
    if (!parse_value(soft_text, &limit.rlim_cur) || !parse_value(hard_text, &limit.rlim_max)) {
      fprintf(stderr, "kit launch: %s is not name=SOFT:HARD\n", argument);
      exit(EXIT_SETUP);
    }
    if (setrlimit(kLimits[i].resource, &limit) != 0) {
      fprintf(stderr, "kit launch: could not set the limit %s: %s\n", argument, strerror(errno));
      exit(EXIT_SETUP);
    }
    return 1;
  }
  return 0;
}

/* As grader/confine/cgroups.py's join: a cgroup that cannot be joined is passed over (the test runs
 * without it; the run's first process proved the path works). */
static void join_cgroup(const char *procs) {
  char pid[32];
  int length = snprintf(pid, sizeof pid, "%ld", (long)getpid());
  int fd = open(procs, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  if (write(fd, pid, (size_t)length) < 0) {
    /* passed over, as above */
  }
  close(fd);
}

int main(int argc, char **argv) {
  int split = 1;
  while (split < argc && strcmp(argv[split], "--") != 0) ++split;
  if (split + 1 >= argc) {
    fputs(
        "usage: kit_launch [core|fsize|cpu|nofile=SOFT:HARD ...] [cgroup=PROCS ...] -- COMMAND "
        "...\n",
        stderr);
    return EXIT_SETUP;
  }
  for (int i = 1; i < split; ++i) {
    if (strncmp(argv[i], "cgroup=", 7) == 0) continue;
    if (!set_limit(argv[i])) {
      fprintf(stderr, "kit launch: unknown argument %s\n", argv[i]);
      return EXIT_SETUP;
    }
  }
  for (int i = 1; i < split; ++i) {
    if (strncmp(argv[i], "cgroup=", 7) == 0) join_cgroup(argv[i] + 7);
  }
  char **command = argv + split + 1;
  execvp(command[0], command);
  fprintf(stderr, "kit launch: could not execute %s: %s\n", command[0], strerror(errno));
  return EXIT_NOT_RUN;
}
