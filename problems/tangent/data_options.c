/* data_options.c — the data options (atf_data_options): defaults, setting one by name, and the
 * data directories searched for mnist and fashion-mnist. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_data.h"
#include "atf_util.h"

atf_data_options atf_data_options_default(void)
{
    atf_data_options o;
    memset(&o, 0, sizeof o);
    snprintf(o.source, sizeof o.source, "synthetic");
    o.n_train = -1;
    o.n_test = -1;
    o.seed = 1;
    o.standardize = -1;
    o.targets = ATF_TARGETS_AUTO;
    o.teacher_seed = 99991;
    return o;
}

const char *atf_targets_name(atf_targets t)
{
    switch (t) {
    case ATF_TARGETS_LABELS: return "labels";
    case ATF_TARGETS_GIVEN: return "given";
    case ATF_TARGETS_TEACHER: return "teacher";
    case ATF_TARGETS_TEACHER_SIGN: return "teacher-sign";
    default: return "auto";
    }
}

static atf_error parse_u64(const char *opt, const char *text, uint64_t *out, char *err)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!*text || *end || errno || text[0] == '-') {
        atf_errorf(err, "%s: '%s' is not a nonnegative integer", opt, text);
        return ATF_E_USAGE;
    }
    *out = v;
    return ATF_OK;
}

static atf_error parse_count(const char *opt, const char *text, int *out, char *err)
{
    uint64_t v;
    if (parse_u64(opt, text, &v, err))
        return ATF_E_USAGE;
    if (v > (1u << 30)) {
        atf_errorf(err, "%s: %s is too large", opt, text);
        return ATF_E_USAGE;
    }
    *out = (int)v;
    return ATF_OK;
}

/* One of two words: *flag = 0 for off, 1 for on; ATF_E_USAGE naming the option otherwise. */
static atf_error parse_choice(const char *opt, const char *value, const char *off, const char *on,
                              int *flag, char *err)
{
    if (strcmp(value, off) && strcmp(value, on)) {
        atf_errorf(err, "%s: '%s' (expected %s or %s)", opt, value, off, on);
        return ATF_E_USAGE;
    }
    *flag = !strcmp(value, on);
    return ATF_OK;
}

static atf_error parse_classes(const char *text, atf_data_options *o, char *err)
{
    long v[ATF_MAX_CLASSES];
    int n;
    o->nclasses = 0;
    if (atf_parse_ints(text, 0, 1 << 30, v, ATF_MAX_CLASSES, &n, "classes", err))
        return ATF_E_USAGE;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) {
            if (v[j] == v[i]) {
                atf_errorf(err, "classes: class %ld listed twice", v[i]);
                return ATF_E_USAGE;
            }
        }
        o->classes[i] = (int)v[i];
    }
    o->nclasses = n;
    return ATF_OK;
}

static atf_error parse_targets(const char *text, atf_targets *t, char *err)
{
    static const atf_targets all[] = {ATF_TARGETS_AUTO, ATF_TARGETS_LABELS, ATF_TARGETS_GIVEN,
                                      ATF_TARGETS_TEACHER, ATF_TARGETS_TEACHER_SIGN};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (!strcmp(text, atf_targets_name(all[i]))) {
            *t = all[i];
            return ATF_OK;
        }
    }
    atf_errorf(err, "targets: '%s' unknown (expected labels, given, teacher or teacher-sign)",
               text);
    return ATF_E_USAGE;
}

atf_error atf_data_option(atf_data_options *o, const char *name, const char *value, char *err)
{
    if (!strcmp(name, "data")) {
        if (!*value ||
            snprintf(o->source, sizeof o->source, "%s", value) >= (int)sizeof o->source) {
            atf_errorf(err, "data: empty or too long");
            return ATF_E_USAGE;
        }
        return ATF_OK;
    }
    if (!strcmp(name, "classes"))
        return parse_classes(value, o, err);
    if (!strcmp(name, "n-train"))
        return parse_count(name, value, &o->n_train, err);
    if (!strcmp(name, "n-test"))
        return parse_count(name, value, &o->n_test, err);
    if (!strcmp(name, "data-seed"))
        return parse_u64(name, value, &o->seed, err);
    if (!strcmp(name, "teacher-seed"))
        return parse_u64(name, value, &o->teacher_seed, err);
    if (!strcmp(name, "targets"))
        return parse_targets(value, &o->targets, err);
    if (!strcmp(name, "standardize"))
        return parse_choice(name, value, "0", "1", &o->standardize, err);
    if (!strcmp(name, "split"))
        return parse_choice(name, value, "pooled", "official", &o->official_split, err);
    atf_errorf(err, "unknown data option '%s'", name);
    return ATF_E_USAGE;
}

atf_error atf_data_add_dir(atf_data_options *o, const char *dir, char *err)
{
    if (o->ndata_dirs == ATF_MAX_DATA_DIRS) {
        atf_errorf(err, "data directory %s: more than %d data directories", dir,
                   ATF_MAX_DATA_DIRS);
        return ATF_E_USAGE;
    }
    char *slot = o->data_dirs[o->ndata_dirs];
    if (!*dir || snprintf(slot, ATF_PATHLEN, "%s", dir) >= ATF_PATHLEN) {
        atf_errorf(err, "data directory: empty or too long");
        return ATF_E_USAGE;
    }
    o->ndata_dirs++;
    return ATF_OK;
}
