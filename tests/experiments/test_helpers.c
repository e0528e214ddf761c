/* test_helpers.c — unit tests of the experiments library (linked, not compiled in): the resumable row store
 * (quoting, reopen, torn last line, JSON lines rebuilt from the CSV, refused duplicates and
 * column changes), effective rank, scale=auto resolution, test metrics, and the progress line's
 * ticker (an update kept back is written while nothing else happens). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atf_experiments.h"
#include "atf_util.h"

static int failures = 0;

#define CHECK(cond)                                                                               \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);              \
            failures++;                                                                           \
        }                                                                                         \
    } while (0)

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

static void make_row(atf_row *row, const char *key, double x, const char *note)
{
    atf_row_clear(row);
    atf_row_str(row, "key", key);
    atf_row_num(row, "x", x);
    atf_row_str(row, "note", note);
    atf_row_int(row, "count", 7);
}

static void test_rowstore(const char *dir)
{
    char csv[1024], jsonl[1024], err[ATF_ERRLEN];
    snprintf(csv, sizeof csv, "%s/rows.csv", dir);
    snprintf(jsonl, sizeof jsonl, "%s/rows.jsonl", dir);
    remove(csv);
    remove(jsonl);

    atf_rowstore *st = NULL;
    CHECK(atf_rowstore_open(csv, jsonl, "key", &st, err) == ATF_OK);
    atf_row row;
    make_row(&row, "layer|pow:p=1.5,scale=0.1", 0.25, "a \"quoted\", comma");
    CHECK(atf_rowstore_append(st, &row, err) == ATF_OK);
    make_row(&row, "b", NAN, "plain");
    CHECK(atf_rowstore_append(st, &row, err) == ATF_OK);
    make_row(&row, "b", 1.0, "again");
    CHECK(atf_rowstore_append(st, &row, err) == ATF_E_INPUT); /* duplicate key */
    atf_row other;
    atf_row_clear(&other);
    atf_row_str(&other, "key", "c");
    atf_row_num(&other, "y", 1.0);
    CHECK(atf_rowstore_append(st, &other, err) == ATF_E_INPUT); /* other columns */
    CHECK(atf_rowstore_count(st) == 2);
    atf_rowstore_close(st);

    char *text = slurp(csv);
    CHECK(text && !strcmp(text, "key,x,note,count\n"
                                "\"layer|pow:p=1.5,scale=0.1\",0.25,\"a \"\"quoted\"\", comma\",7\n"
                                "b,nan,plain,7\n"));
    free(text);
    text = slurp(jsonl);
    CHECK(text && !strcmp(text, "{\"key\": \"layer|pow:p=1.5,scale=0.1\", \"x\": 0.25, \"note\": "
                                "\"a \\\"quoted\\\", comma\", \"count\": 7}\n"
                                "{\"key\": \"b\", \"x\": null, \"note\": \"plain\", \"count\": 7}\n"));
    char *good_jsonl = text;

    /* a crash in the middle of a row: torn CSV line and missing JSON line */
    FILE *f = fopen(csv, "ab");
    fputs("c,0.5,torn", f);
    fclose(f);
    f = fopen(jsonl, "wb");
    fputs("{\"key\": \"layer|pow:p=1.5,scale=0.1\", \"x\": 0.25", f);
    fclose(f);
    CHECK(atf_rowstore_open(csv, jsonl, "key", &st, err) == ATF_OK);
    CHECK(atf_rowstore_count(st) == 2);
    CHECK(atf_rowstore_has(st, "layer|pow:p=1.5,scale=0.1"));
    CHECK(atf_rowstore_has(st, "b") && !atf_rowstore_has(st, "c"));
    const atf_row *r0 = atf_rowstore_row(st, 0);
    CHECK(r0 && !strcmp(atf_row_get(r0, "note"), "a \"quoted\", comma"));
    CHECK(r0 && atf_row_getnum(r0, "x") == 0.25);
    make_row(&row, "c", 0.5, "whole");
    CHECK(atf_rowstore_append(st, &row, err) == ATF_OK);
    atf_rowstore_close(st);
    text = slurp(jsonl);
    CHECK(text && good_jsonl && !strncmp(text, good_jsonl, strlen(good_jsonl)));
    CHECK(text && strstr(text, "{\"key\": \"c\", \"x\": 0.5, \"note\": \"whole\", \"count\": 7}\n"));
    free(text);
    free(good_jsonl);
    text = slurp(csv);
    CHECK(text && !strstr(text, "torn") && strstr(text, "\nc,0.5,whole,7\n"));
    free(text);

    /* one writer per table: the lock file exists while the table is open, a second opener is
     * refused and leaves it, closing removes it */
    char lock[1100];
    snprintf(lock, sizeof lock, "%s.lock", csv);
    CHECK(atf_rowstore_open(csv, jsonl, "key", &st, err) == ATF_OK);
    CHECK(access(lock, F_OK) == 0);
    pid_t pid = fflush(NULL) == 0 ? fork() : -1; /* record locks belong to a process */
    if (pid == 0) {
        atf_rowstore *second = NULL;
        int refused = atf_rowstore_open(csv, jsonl, "key", &second, err) == ATF_E_USAGE &&
                      !second && strstr(err, "another atf run");
        _exit(refused ? 0 : 1);
    }
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0);
    CHECK(access(lock, F_OK) == 0);
    atf_rowstore_close(st);
    CHECK(access(lock, F_OK) != 0);

    /* a CSV whose header lacks the key column is refused */
    f = fopen(csv, "wb");
    fputs("name,x\nq,1\n", f);
    fclose(f);
    CHECK(atf_rowstore_open(csv, jsonl, "key", &st, err) == ATF_E_INPUT);
    CHECK(strstr(err, "rows.csv") != NULL);
    CHECK(access(lock, F_OK) != 0); /* a refused table leaves no lock behind either */
    remove(csv);
    remove(jsonl);
}

static void test_effective_rank(void)
{
    double d1[4] = {3, 1, 1, 1}; /* energies 9, 1, 1, 1: 9/12 < 0.9, 11/12 ≥ 0.9 */
    CHECK(atf_effective_rank(d1, 4, 0.9) == 3);
    CHECK(atf_effective_rank(d1, 4, 0.75) == 1);
    double d2[3] = {0, 0, 0};
    CHECK(atf_effective_rank(d2, 3, 0.9) == 0);
    double d3[5] = {0.1, -2.0, 0.0, 0.3, 0.0}; /* entrywise layouts: unsorted, signed */
    CHECK(atf_effective_rank(d3, 5, 0.9) == 1);
    CHECK(atf_effective_rank(d3, 5, 0.999) == 3); /* 4.09 / 4.1 < 0.999 */
}

static void test_auto_scale(void)
{
    char out[256], err[ATF_ERRLEN];
    double g;
    CHECK(atf_resolve_auto_scale("sq:scale=auto", 2.0, 0.5, out, sizeof out, &g, err) == ATF_OK);
    CHECK(!strcmp(out, "sq") && g == 1.0); /* canonical (atf_penalty_format): γ = 1 is sq */
    CHECK(atf_resolve_auto_scale("sq:scale=auto+abs:scale=auto", 1.0, 0.1, out, sizeof out, &g,
                                 err) == ATF_OK);
    CHECK(!strcmp(out, "sq:scale=0.01+abs:scale=0.01"));
    CHECK(atf_resolve_auto_scale("sq:scale=auto+abs:scale=3", 1.0, 0.1, out, sizeof out, &g,
                                 err) == ATF_OK); /* only the auto term is resolved */
    CHECK(!strcmp(out, "sq:scale=0.01+abs:scale=3") && g == 0.01);
    CHECK(atf_resolve_auto_scale("bogus:scale=auto", 1.0, 0.1, out, sizeof out, &g, err) ==
          ATF_E_INPUT);
    CHECK(atf_resolve_auto_scale("pow:p=1.5,scale=0.3", 1.0, 0.1, out, sizeof out, &g, err) ==
          ATF_OK);
    CHECK(!strcmp(out, "pow:p=1.5,scale=0.3") && isnan(g));
    CHECK(atf_resolve_auto_scale("zsq:scale=auto", 0.0, 0.1, out, sizeof out, &g, err) ==
          ATF_E_INPUT);
    CHECK(atf_resolve_auto_scale("zsq:scale=auto", 1.0, 0.1, out, 8, &g, err) == ATF_E_USAGE);
}

static void test_with_scale(void)
{
    char out[256], err[ATF_ERRLEN];
    CHECK(atf_penalty_with_scale("sq", "1e-4", out, sizeof out, err) == ATF_OK);
    CHECK(!strcmp(out, "sq:scale=1e-4"));
    CHECK(atf_penalty_with_scale("pow:p=1.5", "auto", out, sizeof out, err) == ATF_OK);
    CHECK(!strcmp(out, "pow:p=1.5,scale=auto"));
    CHECK(atf_penalty_with_scale("pow:scale=3,p=2+abs", "0.1", out, sizeof out, err) == ATF_OK);
    CHECK(!strcmp(out, "pow:p=2,scale=0.1+abs:scale=0.1")); /* canonical order of keys */
    CHECK(atf_penalty_with_scale("zsq:scale=1", "0.01", out, 12, err) == ATF_E_USAGE);
}

static void test_metrics(void)
{
    /* two outputs, three examples: argmax errors against labels and relative MSE */
    double F[6] = {1, 0, 0, 1, 1, 0};
    double Y[6] = {1, 0, 0, 1, 0, 1};
    int labels[3] = {0, 1, 1};
    atf_test_metrics m = atf_prediction_metrics(3, 2, F, Y, labels);
    CHECK(fabs(m.error - 1.0 / 3.0) < 1e-15);
    /* mean(y) = 1/2, Σ(y − ȳ)² = 6/4, Σ(F − y)² = 2 */
    CHECK(fabs(m.rel_mse - 2.0 / 1.5) < 1e-15);
    double med[4] = {4, 1, 3, 2};
    CHECK(atf_median(med, 4) == 2.5);
    double mean, sd, v[3] = {1, 2, NAN};
    atf_mean_std(v, 3, &mean, &sd);
    CHECK(mean == 1.5 && fabs(sd - sqrt(0.5)) < 1e-15);
}

/* Off a terminal the second of two quick updates is kept back; the ticker must write it after
 * ATF_PROGRESS_LOG_INTERVAL seconds although no call follows (a long silent step), and end
 * writes the final line. Waits up to 60 s for it (never asserts a time). */
static void test_progress_ticker(const char *dir)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/progress.txt", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    atf_progress p;
    atf_progress_start(&p, f, 2, 0);
    atf_progress_show(&p, "first step");
    atf_progress_step(&p);
    atf_progress_show(&p, "second step"); /* within the interval: kept back */
    char *text = NULL;
    int seen = 0;
    for (int i = 0; i < 600 && !seen; i++) {
        nanosleep(&(struct timespec){0, 100000000}, NULL);
        free(text);
        text = slurp(path);
        seen = text && strstr(text, "second step") != NULL;
    }
    CHECK(seen);
    atf_progress_end(&p);
    fclose(f);
    free(text);
    text = slurp(path);
    CHECK(text && strstr(text, "0/2") && strstr(text, "first step") && strstr(text, "1/2") &&
          strstr(text, "done"));
    CHECK(text && !strchr(text, '\r'));
    free(text);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    char err[ATF_ERRLEN];
    if (atf_mkdir_p(dir, err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    test_rowstore(dir);
    test_effective_rank();
    test_auto_scale();
    test_with_scale();
    test_metrics();
    test_progress_ticker(dir);
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    return failures ? 1 : 0;
}
