/* net_options.c — the network options the commands share (--mlp, --widths, --seed, --bias,
 * --param) and building the network they describe. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_tangent.h"

atf_net_options atf_net_options_default(void)
{
    atf_net_options o;
    memset(&o, 0, sizeof o);
    o.arch.L = 3;
    o.arch.widths[1] = 128; /* paper B.1: two hidden layers of 128 units, ends from the data */
    o.arch.widths[2] = 128;
    o.seed = 1;
    return o;
}

atf_error atf_net_option(atf_net_options *o, const char *name, const char *value, int *used,
                         char *err)
{
    *used = 1;
    if (!strcmp(name, "mlp")) {
        if (!*value || snprintf(o->mlp_path, sizeof o->mlp_path, "%s", value) >=
                           (int)sizeof o->mlp_path) {
            atf_errorf(err, "--mlp: empty or too long path");
            return ATF_E_USAGE;
        }
        return ATF_OK;
    }
    if (!strcmp(name, "widths")) {
        atf_error e = atf_arch_parse_widths(value, &o->arch, err);
        o->have_widths = !e;
        return e;
    }
    if (!strcmp(name, "seed")) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(value, &end, 10);
        if (!*value || *end || errno || value[0] == '-') {
            atf_errorf(err, "--seed: '%s' is not a nonnegative integer", value);
            return ATF_E_USAGE;
        }
        o->seed = v;
        o->seed_given = 1;
        return ATF_OK;
    }
    if (!strcmp(name, "bias")) {
        o->arch.bias = strcmp(value, "0") != 0;
        return ATF_OK;
    }
    if (!strcmp(name, "param"))
        return atf_param_parse(value, &o->arch.param, err);
    if (!strcmp(name, "init")) {
        if (strcmp(value, "he") && strcmp(value, "torch")) {
            atf_errorf(err, "--init: '%s' unknown (expected he or torch)", value);
            return ATF_E_USAGE;
        }
        o->arch.init = value[0] == 't' ? ATF_INIT_TORCH : ATF_INIT_HE;
        return ATF_OK;
    }
    *used = 0;
    return ATF_OK;
}

atf_error atf_net_arch(const atf_net_options *o, atf_arch *arch, char *err)
{
    if (!o->mlp_path[0]) {
        *arch = o->arch;
        return ATF_OK;
    }
    atf_mlp *m = NULL;
    atf_error e = atf_mlp_read(o->mlp_path, &m, err);
    if (e)
        return e;
    *arch = m->arch;
    atf_mlp_free(m);
    return ATF_OK;
}

atf_error atf_net_build(const atf_net_options *o, const atf_task *task, atf_mlp **out, char *err)
{
    *out = NULL;
    atf_arch arch;
    atf_error e;
    if (o->mlp_path[0]) {
        atf_mlp *m = NULL;
        if ((e = atf_mlp_read(o->mlp_path, &m, err)))
            return e;
        arch = m->arch;
        if ((e = atf_arch_fit_task(&arch, task, err))) {
            atf_mlp_free(m);
            return e;
        }
        *out = m;
        return ATF_OK;
    }
    arch = o->arch;
    if ((e = atf_arch_fit_task(&arch, task, err)))
        return e;
    return atf_mlp_create(&arch, o->seed, out, err);
}

/* Which option kind knows `name`: 1 data, 2 network, 0 neither (probed with a throwaway copy). */
static int option_kind(const char *name, const char *value)
{
    int used = 0;
    atf_data_options d = atf_data_options_default();
    atf_net_options n = atf_net_options_default();
    atf_data_option(&d, name, value, &used, NULL);
    if (used)
        return 1;
    atf_net_option(&n, name, value, &used, NULL);
    return used ? 2 : 0;
}

atf_error atf_tangent_arg(int argc, char **argv, int *i, atf_data_options *d, atf_net_options *n,
                          int *used, char *err)
{
    const char *a = argv[*i];
    *used = 0;
    if (n && !strcmp(a, "--bias")) {
        *used = 1;
        return atf_net_option(n, "bias", "1", used, err);
    }
    if (d && (!strcmp(a, "--standardize") || !strcmp(a, "--no-standardize"))) {
        *used = 1;
        return atf_data_option(d, "standardize", a[2] == 's' ? "1" : "0", used, err);
    }
    if (strncmp(a, "--", 2) != 0)
        return ATF_OK;
    int kind = option_kind(a + 2, "0");
    if ((kind == 1 && !d) || (kind == 2 && !n) || kind == 0)
        return ATF_OK;
    *used = 1;
    if (*i + 1 >= argc) {
        atf_errorf(err, "%s needs a value", a);
        return ATF_E_USAGE;
    }
    const char *value = argv[++*i];
    return kind == 1 ? atf_data_option(d, a + 2, value, used, err)
                     : atf_net_option(n, a + 2, value, used, err);
}
