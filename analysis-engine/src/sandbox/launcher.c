/* The launcher every child process of cpals starts through (analysis-engine/src/sandbox/launch.rs):
 * cpals starts it with posix_spawn, never fork(), and it binds itself, then executes the
 * program in its place (same process, same process group):
 *
 *   launcher PPID CPU AS FSIZE NOFILE NPROC N [FROM TO]*N -- PROGRAM ARGS...
 *
 * It dies with the thread of cpals that started it (PR_SET_PDEATHSIG, and an exit when
 * cpals is already gone), moves descriptor FROM to TO for each pair, closes every other
 * descriptor above 2 at the exec, sets no core dumps and each limit that is not -1 (CPU
 * seconds, address space, file size in bytes, open files, processes), and runs PROGRAM (a
 * path). A failure is reported on standard error and ends it with status 127. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static void fail(const char *what, const char *arg) {
    char buf[600];
    int n = snprintf(buf, sizeof buf, "cpals launcher: %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "", strerror(errno));
    if (n > 0) {
        ssize_t w = write(2, buf, n < (int)sizeof buf ? (size_t)n : sizeof buf - 1);
        (void)w;
    }
    _exit(127);
}

int main(int argc, char **argv) {
    static const int resources[5] = {RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_NPROC};
    int i = 1;
    if (argc < 10) {
        errno = EINVAL;
        fail("usage", NULL);
    }
    long parent = strtol(argv[i++], NULL, 10);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        fail("prctl", NULL);
    if (getppid() != (pid_t)parent)
        _exit(127); /* cpals died before the line above: do not outlive it */
    long long limit[5];
    for (int k = 0; k < 5; k++)
        limit[k] = strtoll(argv[i++], NULL, 10);
    int n = atoi(argv[i++]);
    if (n < 0 || n > 8 || i + 2 * n + 1 >= argc) {
        errno = EINVAL;
        fail("usage", NULL);
    }
    int to[8];
    for (int k = 0; k < n; k++) {
        int from = atoi(argv[i++]);
        to[k] = atoi(argv[i++]);
        /* The sources are at 100 or above, the targets below: no target overwrites a source. */
        if (dup2(from, to[k]) < 0)
            fail("dup2", NULL);
    }
    if (strcmp(argv[i++], "--") != 0) {
        errno = EINVAL;
        fail("usage", NULL);
    }
    /* Every other descriptor above 2 closes at the exec (descriptors another thread of cpals
     * had made inheritable while this process started, the program's own path below). */
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) != 0)
#endif
    {
        long max = sysconf(_SC_OPEN_MAX);
        if (max < 0 || max > 65536)
            max = 65536;
        for (int fd = 3; fd < max; fd++)
            fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    for (int k = 0; k < n; k++)
        fcntl(to[k], F_SETFD, 0);
    struct rlimit r = {0, 0};
    setrlimit(RLIMIT_CORE, &r);
    for (int k = 0; k < 5; k++) {
        if (limit[k] >= 0) {
            r.rlim_cur = r.rlim_max = (rlim_t)limit[k];
            setrlimit(resources[k], &r);
        }
    }
    execv(argv[i], argv + i);
    fail("cannot run", argv[i]);
    return 127;
}
