/* test_util.c — problems/atf_util.h: the clock, atomic writes (replacement, failures keep the
 * old file, no temporary left behind, concurrent writers never share a temporary) and the strict
 * comma-separated lists. Usage: test_util SCRATCH_DIR */
#include "atf_test.h"
#include "atf_util.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char scratch[1024];

static void path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", scratch, name);
}

/* The whole content of a file ("" and -1 when it cannot be read). */
static long slurp(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return (long)n;
}

static void test_clock(void)
{
    double t0 = atf_now(), t1 = atf_now();
    CHECK(t0 > 0 && t1 >= t0, "atf_now is monotonic: %.9f then %.9f", t0, t1);
    struct timespec nap = {0, 20 * 1000 * 1000};
    nanosleep(&nap, NULL);
    double dt = atf_now() - t1;
    CHECK(dt >= 0.019 && dt < 5.0, "20 ms sleep measured as %.6f s", dt);
}

static void test_write_replace(void)
{
    char path[1200], buf[256], err[ATF_ERRLEN] = "";
    path_in(path, sizeof path, "text.txt");
    CHECK(atf_write_text_atomic(path, "first\n", 6, err) == ATF_OK, "new file: %s", err);
    CHECK(slurp(path, buf, sizeof buf) == 6 && !strcmp(buf, "first\n"), "content '%s'", buf);
    CHECK(atf_write_text_atomic(path, "second, longer\n", 15, err) == ATF_OK, "replace: %s", err);
    CHECK(!strcmp(buf, "first\n") && slurp(path, buf, sizeof buf) == 15 &&
              !strcmp(buf, "second, longer\n"), "replaced content '%s'", buf);
    CHECK(atf_write_text_atomic(path, "", 0, err) == ATF_OK && slurp(path, buf, sizeof buf) == 0,
          "an empty text gives an empty file");
    struct stat st;
    mode_t mask = umask(022);
    umask(mask);
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask),
          "mode %o is 0666 less the umask %o", (unsigned)(st.st_mode & 0777), (unsigned)mask);
    CHECK(atf_test_count_temporaries(scratch) == 0, "no temporary left after writes");
}

static void test_write_failures(void)
{
    char path[1200], dir[1200], buf[256], err[ATF_ERRLEN] = "";
    path_in(path, sizeof path, "keep.txt");
    CHECK(atf_write_text_atomic(path, "old\n", 4, err) == ATF_OK, "setup: %s", err);

    /* a write that fails midway (file size limit, in a child): old file kept, no temporary */
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {8, 8};
        setrlimit(RLIMIT_FSIZE, &lim);
        char big[64];
        memset(big, 'x', sizeof big);
        atf_error e = atf_write_text_atomic(path, big, sizeof big, err);
        _exit(e == ATF_E_IO && strstr(err, "keep.txt: cannot write") ? 0 : 1);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a failed write returns ATF_E_IO");
    CHECK(slurp(path, buf, sizeof buf) == 4 && !strcmp(buf, "old\n"), "old file kept: '%s'", buf);
    CHECK(atf_test_count_temporaries(scratch) == 0, "no temporary left after a failed write");

    /* a rename that fails (the target is a directory): the temporary is removed */
    path_in(dir, sizeof dir, "adir");
    mkdir(dir, 0777);
    CHECK(atf_write_text_atomic(dir, "x", 1, err) == ATF_E_IO && strstr(err, "rename"),
          "rename onto a directory fails: %s", err);
    CHECK(atf_test_count_temporaries(scratch) == 0, "no temporary left after a failed rename");

    /* no directory to create the temporary in */
    path_in(path, sizeof path, "missing/sub/file.txt");
    CHECK(atf_write_text_atomic(path, "x", 1, err) == ATF_E_IO &&
              strstr(err, "cannot create a temporary file next to it"),
          "missing directory: %s", err);
    CHECK(atf_write_text_atomic("", "x", 1, err) == ATF_E_IO, "empty path refused");

    /* a writer that gives up: the old file stays */
    atf_atomic_file af;
    int fd = -1;
    path_in(path, sizeof path, "keep.txt");
    CHECK(atf_atomic_begin(&af, path, &fd, err) == ATF_OK && fd >= 0, "begin: %s", err);
    CHECK(write(fd, "new", 3) == 3, "write to the temporary");
    close(fd);
    CHECK(atf_test_count_temporaries(scratch) == 1, "the temporary exists while writing");
    atf_atomic_abort(&af);
    atf_atomic_abort(&af); /* twice is harmless */
    CHECK(slurp(path, buf, sizeof buf) == 4 && !strcmp(buf, "old\n"), "abort keeps '%s'", buf);
    CHECK(atf_test_count_temporaries(scratch) == 0, "abort removes the temporary");
    CHECK(atf_atomic_commit(&af, err) == ATF_E_IO, "commit after abort fails");
}

/* Two writers of one target never share a temporary: in one process (two reservations at
 * once) and in two processes writing the same file many times. */
static void test_concurrent_writers(void)
{
    char path[1200], buf[256], err[ATF_ERRLEN] = "";
    path_in(path, sizeof path, "shared.txt");
    atf_atomic_file a, b;
    int fa = -1, fb = -1;
    CHECK(atf_atomic_begin(&a, path, &fa, err) == ATF_OK &&
              atf_atomic_begin(&b, path, &fb, err) == ATF_OK, "two reservations: %s", err);
    CHECK(strcmp(a.tmp, b.tmp) != 0, "distinct temporaries %s and %s", a.tmp, b.tmp);
    CHECK(write(fa, "A", 1) == 1 && write(fb, "BB", 2) == 2, "writes");
    close(fa);
    close(fb);
    CHECK(atf_atomic_commit(&a, err) == ATF_OK, "commit A: %s", err);
    CHECK(slurp(path, buf, sizeof buf) == 1 && !strcmp(buf, "A"), "A in place: '%s'", buf);
    CHECK(atf_atomic_commit(&b, err) == ATF_OK, "commit B: %s", err);
    CHECK(slurp(path, buf, sizeof buf) == 2 && !strcmp(buf, "BB"), "B in place: '%s'", buf);

    enum { ROUNDS = 50 };
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            char text[128];
            memset(text, k ? 'q' : 'p', sizeof text);
            int bad = 0;
            for (int r = 0; r < ROUNDS; r++)
                bad |= atf_write_text_atomic(path, text, sizeof text, err) != ATF_OK;
            _exit(bad);
        }
    }
    for (int k = 0; k < 2; k++) {
        int status = -1;
        waitpid(kids[k], &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d succeeded", k);
    }
    long n = slurp(path, buf, sizeof buf);
    int whole = n == 128;
    for (long i = 1; whole && i < n; i++)
        whole = buf[i] == buf[0];
    CHECK(whole, "the file is one writer's whole text (%ld bytes)", n);
    CHECK(atf_test_count_temporaries(scratch) == 0, "no temporary left after concurrent writers");
}

static void test_parse_ints(void)
{
    long v[8];
    int n = -1;
    char err[ATF_ERRLEN] = "";
    CHECK(atf_parse_ints("3,1,4", 0, 10, v, 8, &n, "xs", err) == ATF_OK && n == 3 && v[0] == 3 &&
              v[1] == 1 && v[2] == 4, "3,1,4");
    CHECK(atf_parse_ints("-5", -10, 10, v, 8, &n, "xs", err) == ATF_OK && n == 1 && v[0] == -5,
          "a negative value");
    CHECK(atf_parse_ints("7", 7, 7, v, 1, &n, "xs", err) == ATF_OK && n == 1, "bounds inclusive");
    static const struct {
        const char *text, *reason;
    } bad[] = {
        {"", "xs: empty list"},
        {"1,,2", "xs: empty item in '1,,2'"},
        {",1", "empty item"},
        {"1,", "empty item"},
        {",", "empty item"},
        {" 1", "xs: ' 1' is not an integer"},
        {"1 ", "'1 ' is not an integer"},
        {"1, 2", "' 2' is not an integer"},
        {"1.5", "'1.5' is not an integer"},
        {"0x10", "'0x10' is not an integer"},
        {"a", "'a' is not an integer"},
        {"1;2", "'1;2' is not an integer"},
        {"11", "xs: 11 is outside [0, 10]"},
        {"-1", "-1 is outside [0, 10]"},
        {"99999999999999999999999", "is outside [0, 10]"},
        {"1,2,3,4,5,6,7,8,9", "xs: at most 8 values"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        atf_error e = atf_parse_ints(bad[i].text, 0, 10, v, 8, &n, "xs", err);
        CHECK(e == ATF_E_USAGE && strstr(err, bad[i].reason), "ints '%s': %d, '%s' lacks '%s'",
              bad[i].text, (int)e, err, bad[i].reason);
    }
    CHECK(atf_parse_ints(NULL, 0, 10, v, 8, &n, "xs", err) == ATF_E_USAGE, "NULL is empty");
}

static void test_parse_doubles(void)
{
    double v[4];
    int n = -1;
    char err[ATF_ERRLEN] = "";
    CHECK(atf_parse_doubles("1e-3,2.5,-7,0x1p-3", v, 4, &n, "ps", err) == ATF_OK && n == 4 &&
              v[0] == 1e-3 && v[1] == 2.5 && v[2] == -7.0 && v[3] == 0.125, "four numbers: %s",
          err);
    static const struct {
        const char *text, *reason;
    } bad[] = {
        {"", "ps: empty list"},
        {"1,,2", "ps: empty item in '1,,2'"},
        {"1,", "empty item"},
        {"inf", "ps: 'inf' is not a finite number"},
        {"nan", "'nan' is not a finite number"},
        {"1e999", "'1e999' is not a finite number"},
        {"1.5.2", "'1.5.2' is not a finite number"},
        {"2,x", "'x' is not a finite number"},
        {" 2", "' 2' is not a finite number"},
        {"1,2,3,4,5", "ps: at most 4 values"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        atf_error e = atf_parse_doubles(bad[i].text, v, 4, &n, "ps", err);
        CHECK(e == ATF_E_USAGE && strstr(err, bad[i].reason), "doubles '%s': %d, '%s' lacks '%s'",
              bad[i].text, (int)e, err, bad[i].reason);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_util SCRATCH_DIR\n");
        return 2;
    }
    snprintf(scratch, sizeof scratch, "%s", argv[1]);
    mkdir(scratch, 0777);
    test_clock();
    test_write_replace();
    test_write_failures();
    test_concurrent_writers();
    test_parse_ints();
    test_parse_doubles();
    return atf_test_finish("test_util");
}
