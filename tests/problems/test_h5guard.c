/* test_h5guard.c — the HDF5 guard of problems/io/: files are read by atf-h5check (spawned,
 * never forked) before libhdf5 parses them in this process, and writes go through a file driver
 * that never lets libhdf5 see a failure.
 *
 *   - corrupt files are refused with one line naming the file: truncated, garbage after the
 *     superblock, no signature, a global-heap object whose length was changed so that libhdf5
 *     loops forever (refused at the small floor of the time limit: the message says "3 s"; no
 *     wall time is asserted) or copies far past a buffer (crash);
 *   - the checker named by ATF_H5CHECK: a missing one is a clear error naming ATF_H5CHECK, one
 *     that gives no report refuses, "none" reads without the check; ATF_H5_CHECK_SECONDS;
 *   - no process is left behind: after all reads, this process has no child (zombie or not);
 *   - a write past the file-size limit, with SIGXFSZ at its default action (which would end the
 *     process) or ignored, fails with "File too large (file size limit exceeded)", keeps the old
 *     file, leaves no temporary, and the process then exits normally (libhdf5's exit handler
 *     crashed after a failed write before).
 *
 * Usage: test_h5guard SCRATCH_DIR */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atf_problem.h"
#include "atf_test.h"

static char scratch[1024];

static void path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", scratch, name);
}

/* One dense block, N examples, C = 1: about 8 * N * 12 bytes of J. */
static atf_problem *small_problem(int N, uint64_t seed)
{
    atf_test_rng rng;
    atf_test_rng_seed(&rng, seed);
    atf_problem *p = atf_problem_new(N, 1, 1);
    if (!p)
        return NULL;
    for (int m = 0; m < p->M; m++)
        p->r[m] = atf_test_symmetric(&rng);
    atf_block *b = &p->blocks[0];
    snprintf(b->name, sizeof b->name, "W");
    b->rows = 4;
    b->cols = 3;
    b->kind = ATF_OP_DENSE;
    b->J = atf_test_new_symmetric(&rng, (size_t)p->M * 12);
    return p;
}

static long file_bytes(const char *path, unsigned char **out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        fclose(f);
        return -1;
    }
    fclose(f);
    *out = b;
    return n;
}

static int put_bytes(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(b, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int k = bytes - 1; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
}

static void set_u64le(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

/* The first global heap collection of the file (atf writes its string attributes there):
 * "GCOL", version, 3 reserved bytes, the collection's size (8); then objects: index (2),
 * reference count (2), reserved (4), size (8), data padded to 8 bytes; index 0 is the free
 * space, whose data is zeros. *first = offset of the first object, *free_obj = of the free
 * space; -1 if there is no such collection. */
static int find_gheap(const unsigned char *b, long n, long *first, long *free_obj)
{
    long g = -1;
    for (long i = 0; i + 32 <= n && g < 0; i++)
        if (memcmp(b + i, "GCOL", 4) == 0)
            g = i;
    if (g < 0)
        return -1;
    uint64_t size = get_le(b + g + 8, 8);
    long end = size < (uint64_t)(n - g) ? g + (long)size : n;
    *first = g + 16;
    for (long p = g + 16; p + 16 <= end;) {
        uint64_t len = get_le(b + p + 8, 8);
        if (get_le(b + p, 2) == 0) {
            *free_obj = p;
            return p > *first ? 0 : -1;
        }
        if (len > (uint64_t)(end - p))
            return -1;
        p += 16 + (long)((len + 7) / 8 * 8);
    }
    return -1;
}

/* A copy of `src` with the length of the first global-heap object changed: with `hang`, so that
 * libhdf5 (1.10) decoding the collection lands in the zeros of the free space, where it reads an
 * object of length 0 and steps by 0 forever; else to 2^40 bytes, which it copies into the
 * string's buffer (a crash). */
static int gheap_variant(const char *src, const char *dst, int hang)
{
    unsigned char *b;
    long n = file_bytes(src, &b), first, free_obj;
    int st = -1;
    if (n > 0 && find_gheap(b, n, &first, &free_obj) == 0) {
        set_u64le(b + first + 8, hang ? (uint64_t)(free_obj - first) : (uint64_t)1 << 40);
        st = put_bytes(dst, b, (size_t)n);
    }
    free(b);
    return st;
}

/* Children of this process (zombies included), from /proc. */
static int count_children(void)
{
    DIR *d = opendir("/proc");
    int n = 0;
    pid_t me = getpid();
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300], line[1024];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t got = fread(line, 1, sizeof line - 1, f);
        fclose(f);
        line[got] = '\0';
        char *close_paren = strrchr(line, ')'); /* the command name may hold anything */
        char state;
        long ppid;
        if (close_paren && sscanf(close_paren + 1, " %c %ld", &state, &ppid) == 2 &&
            ppid == (long)me)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* Read `path`: the error, with the message in err; the problem is freed. */
static atf_error read_it(const char *path, char *err)
{
    atf_problem *p = NULL;
    err[0] = '\0';
    atf_error e = atf_problem_read(path, &p, err);
    atf_problem_free(p);
    return e;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ------------------------------------------------------------------ tests */

static char valid[1200];

static void test_valid_reads(void)
{
    char err[ATF_ERRLEN];
    atf_problem *p = small_problem(50, 1);
    CHECK(p && atf_problem_write(valid, p, err) == ATF_OK, "write the valid file: %s", err);
    atf_problem_free(p);
    int bad = 0;
    for (int k = 0; k < 60; k++)
        bad += read_it(valid, err) != ATF_OK;
    CHECK(bad == 0, "60 reads of a valid file: %d refused (%s)", bad, err);
    CHECK(count_children() == 0, "no child left after 60 reads: %d", count_children());
}

static void test_corrupt(void)
{
    char path[1200], err[ATF_ERRLEN], want[1400];
    unsigned char *b;
    long n = file_bytes(valid, &b);
    CHECK(n > 4096, "the valid file has %ld bytes", n);
    if (n <= 4096) {
        free(b);
        return;
    }

    /* truncated: libhdf5 refuses to open it (its end of file is before its end of data) */
    path_in(path, sizeof path, "truncated.h5");
    put_bytes(path, b, (size_t)n / 2);
    CHECK(read_it(path, err) == ATF_E_INPUT, "truncated: %s", err);
    snprintf(want, sizeof want, "%s: cannot open as HDF5 (truncated or corrupt file)", path);
    CHECK(strcmp(err, want) == 0, "truncated: message '%s'", err);

    /* garbage after the superblock (signature and superblock kept) */
    unsigned char *g = malloc((size_t)n);
    memcpy(g, b, (size_t)n);
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 7);
    for (long i = 96; i < n; i++)
        g[i] = (unsigned char)(atf_test_symmetric(&rng) * 127.0 + 128.0);
    path_in(path, sizeof path, "garbage.h5");
    put_bytes(path, g, (size_t)n);
    CHECK(read_it(path, err) == ATF_E_INPUT, "garbage: %s", err);
    CHECK(starts_with(err, path) && err[strlen(path)] == ':' && !strchr(err, '\n'),
          "garbage: one line naming the file: '%s'", err);

    /* no HDF5 signature at all */
    for (long i = 0; i < 96; i++)
        g[i] = (unsigned char)('a' + i % 26);
    path_in(path, sizeof path, "nosig.h5");
    put_bytes(path, g, (size_t)n);
    CHECK(read_it(path, err) == ATF_E_INPUT, "no signature: %s", err);
    snprintf(want, sizeof want, "%s: not an HDF5 file (no HDF5 signature)", path);
    CHECK(strcmp(err, want) == 0, "no signature: message '%s'", err);
    free(g);
    free(b);

    /* libhdf5 1.10 loops forever on it: the check is stopped at the floor of its time limit
     * (3 s for a small file) */
    path_in(path, sizeof path, "hang.h5");
    CHECK(gheap_variant(valid, path, 1) == 0, "hang.h5 made (a global heap found)");
    CHECK(read_it(path, err) == ATF_E_INPUT, "hang: %s", err);
    snprintf(want, sizeof want, "%s: refused: reading it did not finish within 3 s (a corrupt "
             "file can hang libhdf5)", path);
    CHECK(strcmp(err, want) == 0, "hang: message '%s'", err);

    /* libhdf5 copies 2^40 bytes into a small buffer (a sanitizer build's checker catches that
     * itself and exits 1) */
    path_in(path, sizeof path, "crash.h5");
    CHECK(gheap_variant(valid, path, 0) == 0, "crash.h5 made");
    CHECK(read_it(path, err) == ATF_E_INPUT, "crash: %s", err);
    snprintf(want, sizeof want, "%s: refused: reading it crashed libhdf5 (", path);
    CHECK(starts_with(err, want) && !strchr(err, '\n'), "crash: message '%s'", err);

    CHECK(count_children() == 0, "no child left after the corrupt files: %d", count_children());
}

static void test_checker_choice(void)
{
    char err[ATF_ERRLEN], want[1400];
    setenv("ATF_H5CHECK", "/nonexistent/atf-h5check", 1);
    CHECK(read_it(valid, err) == ATF_E_IO, "missing ATF_H5CHECK: %s", err);
    snprintf(want, sizeof want, "%s: cannot start the HDF5 checker /nonexistent/atf-h5check "
             "(ATF_H5CHECK): %s", valid, strerror(ENOENT));
    CHECK(strcmp(err, want) == 0, "missing ATF_H5CHECK: message '%s'", err);

    setenv("ATF_H5CHECK", "/bin/true", 1); /* runs, says nothing */
    CHECK(read_it(valid, err) == ATF_E_IO, "a checker without a report: %s", err);
    snprintf(want, sizeof want, "%s: cannot check the file: the HDF5 checker /bin/true "
             "(ATF_H5CHECK) ended without a report", valid);
    CHECK(strcmp(err, want) == 0, "a checker without a report: message '%s'", err);

    setenv("ATF_H5CHECK", "none", 1); /* documented: read without the check */
    CHECK(read_it(valid, err) == ATF_OK, "ATF_H5CHECK=none reads: %s", err);
    unsetenv("ATF_H5CHECK");

    setenv("ATF_H5_CHECK_SECONDS", "1e-6", 1);
    CHECK(read_it(valid, err) == ATF_E_INPUT, "1e-6 s: %s", err);
    snprintf(want, sizeof want, "%s: refused: reading it did not finish within 1e-06 s (a "
             "corrupt file can hang libhdf5)", valid);
    CHECK(strcmp(err, want) == 0, "1e-6 s: message '%s'", err);
    unsetenv("ATF_H5_CHECK_SECONDS");
    CHECK(read_it(valid, err) == ATF_OK, "read again: %s", err);
    CHECK(count_children() == 0, "no child left: %d", count_children());
}

/* In a child of the test (the library itself never forks): the file-size limit during a write. */
static void test_fsize_limit(int ignore_sigxfsz)
{
    char path[1200], err[ATF_ERRLEN] = "";
    path_in(path, sizeof path, "kept.h5");
    CHECK(put_bytes(path, (const unsigned char *)"old\n", 4) == 0, "old file");
    atf_problem *p = small_problem(2000, 3); /* about 200 KB */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (ignore_sigxfsz)
            signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {65536, 65536};
        setrlimit(RLIMIT_FSIZE, &lim);
        atf_error e = atf_problem_write(path, p, err);
        int ok = e == ATF_E_IO && starts_with(err, path) && strstr(err, ": cannot write") &&
                 strstr(err, strerror(EFBIG)) && strstr(err, "(file size limit exceeded)");
        if (!ok)
            fprintf(stderr, "write under the file-size limit: %d '%s'\n", (int)e, err);
        atf_problem_free(p);
        exit(ok ? 0 : 1); /* exit, not _exit: libhdf5's exit handler must survive */
    }
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "write past the file-size limit (SIGXFSZ %s): status %d%s%d", ignore_sigxfsz ?
          "ignored" : "default", status, WIFSIGNALED(status) ? ", signal " : ", exit ",
          WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    unsigned char *b;
    long n = file_bytes(path, &b);
    CHECK(n == 4 && memcmp(b, "old\n", 4) == 0, "the old file is kept (%ld bytes)", n);
    free(b);
    CHECK(atf_test_count_temporaries(scratch) == 0, "no temporary left");
    /* and the same write without the limit succeeds */
    CHECK(atf_problem_write(path, p, err) == ATF_OK, "write without the limit: %s", err);
    CHECK(read_it(path, err) == ATF_OK, "read it back: %s", err);
    atf_problem_free(p);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_h5guard SCRATCH_DIR\n");
        return 2;
    }
    snprintf(scratch, sizeof scratch, "%s", argv[1]);
    mkdir(scratch, 0777);
    unsetenv("ATF_H5CHECK");
    unsetenv("ATF_H5_CHECK_SECONDS");
    path_in(valid, sizeof valid, "valid.h5");
    test_valid_reads();
    test_corrupt();
    test_checker_choice();
    test_fsize_limit(0);
    test_fsize_limit(1);
    CHECK(count_children() == 0, "no child at the end: %d", count_children());
    return atf_test_finish("test_h5guard");
}
