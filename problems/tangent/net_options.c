/* net_options.c — the network options (atf_net_options: mlp, widths, seed, bias, activation,
 * param, init),
 * setting one by name, checking an architecture against a task and building the network the
 * options describe. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_mlp.h"

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

/* The bias and activation options depend on the number of layers, which a later widths option
 * may change: they are checked for syntax here and applied to the architecture by
 * apply_layer_options. */
static atf_error bias_option(atf_net_options *o, const char *value, char *err)
{
    atf_arch any = {.L = ATF_MAX_LAYERS};
    atf_error e = atf_arch_parse_bias(value, &any, err);
    if (!e && snprintf(o->bias, sizeof o->bias, "%s", value) >= (int)sizeof o->bias) {
        atf_errorf(err, "bias: '%.40s...' too long", value);
        e = ATF_E_USAGE;
    }
    return e;
}

static atf_error activation_option(atf_net_options *o, const char *value, char *err)
{
    int n = 1;
    for (const char *s = value; *s; s++)
        n += *s == ';';
    atf_activation act[ATF_MAX_LAYERS];
    atf_error e = n < ATF_MAX_LAYERS ? atf_activations_parse(value, n + 1, act, err) : ATF_OK;
    if (!e && (n >= ATF_MAX_LAYERS ||
               snprintf(o->activation, sizeof o->activation, "%s", value) >=
                   (int)sizeof o->activation)) {
        atf_errorf(err, "activation: %d specs for at most %d hidden layers", n,
                   ATF_MAX_LAYERS - 1);
        e = ATF_E_USAGE;
    }
    return e;
}

/* The bias and activation options for arch's number of layers. */
static atf_error apply_layer_options(const atf_net_options *o, atf_arch *arch, char *err)
{
    atf_error e = atf_arch_parse_bias(o->bias[0] ? o->bias : "0", arch, err);
    memset(arch->act, 0, sizeof arch->act);
    if (!e && o->activation[0])
        e = atf_activations_parse(o->activation, arch->L, arch->act, err);
    return e;
}

atf_error atf_net_option(atf_net_options *o, const char *name, const char *value, char *err)
{
    if (!strcmp(name, "mlp")) {
        if (!*value || snprintf(o->mlp_path, sizeof o->mlp_path, "%s", value) >=
                           (int)sizeof o->mlp_path) {
            atf_errorf(err, "mlp: empty or too long path");
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
            atf_errorf(err, "seed: '%s' is not a nonnegative integer", value);
            return ATF_E_USAGE;
        }
        o->seed = v;
        o->seed_given = 1;
        return ATF_OK;
    }
    if (!strcmp(name, "bias"))
        return bias_option(o, value, err);
    if (!strcmp(name, "activation"))
        return activation_option(o, value, err);
    if (!strcmp(name, "param"))
        return atf_param_parse(value, &o->arch.param, err);
    if (!strcmp(name, "init")) {
        if (strcmp(value, "he") && strcmp(value, "torch") && strcmp(value, "lecun")) {
            atf_errorf(err, "init: '%s' unknown (expected he, torch or lecun)", value);
            return ATF_E_USAGE;
        }
        o->arch.init = value[0] == 't' ? ATF_INIT_TORCH
                     : value[0] == 'l' ? ATF_INIT_LECUN : ATF_INIT_HE;
        return ATF_OK;
    }
    atf_errorf(err, "unknown network option '%s'", name);
    return ATF_E_USAGE;
}

/* Where the widths came from ("m.h5", the MLP file, or "widths", the option) and the data item
 * ("data.h5: /X" for an HDF5 file's arrays, else "SRC: inputs" / "SRC: targets"), for messages. */
static void fit_names(const atf_arch *arch, const atf_task *task, const char *item, char *widths,
                      char *data, size_t len)
{
    if (arch->origin[0])
        snprintf(widths, len, "%s", arch->origin);
    else
        snprintf(widths, len, "widths");
    if (!strcmp(task->source_name, "hdf5") &&
        (item[1] == 'X' || task->targets == ATF_TARGETS_GIVEN))
        snprintf(data, len, "%s: %s", task->source, item);
    else
        snprintf(data, len, "%s: %s", task->source, item[1] == 'X' ? "inputs" :
                 "targets");
}

atf_error atf_arch_fit_task(atf_arch *arch, const atf_task *task, char *err)
{
    int D = task->train.D, C = task->train.C;
    if (arch->widths[0] == 0)
        arch->widths[0] = D;
    if (arch->widths[arch->L] == 0)
        arch->widths[arch->L] = C;
    char widths[ATF_PATHLEN + 16], data[ATF_PATHLEN + 32];
    atf_error e = arch->origin[0] ? ATF_E_INPUT : ATF_E_USAGE;
    if (arch->widths[0] != D) {
        fit_names(arch, task, "/X", widths, data, sizeof widths);
        atf_errorf(err, "%s: dimension %d but %s has input width %d", data, D, widths,
                   arch->widths[0]);
        return e;
    }
    if (arch->widths[arch->L] != C) {
        fit_names(arch, task, "/Y", widths, data, sizeof widths);
        atf_errorf(err, "%s: %d output%s but %s has output width %d", data, C,
                   C == 1 ? "" : "s", widths, arch->widths[arch->L]);
        return e;
    }
    return ATF_OK;
}

/* A network read from a file brings its own activations. */
static atf_error check_no_activation(const atf_net_options *o, char *err)
{
    if (!o->activation[0])
        return ATF_OK;
    atf_errorf(err, "activation: not allowed with mlp (%s has its own activations)", o->mlp_path);
    return ATF_E_USAGE;
}

atf_error atf_net_arch(const atf_net_options *o, atf_arch *arch, char *err)
{
    if (!o->mlp_path[0]) {
        *arch = o->arch;
        return apply_layer_options(o, arch, err);
    }
    atf_mlp *m = NULL;
    atf_error e = check_no_activation(o, err);
    if (!e)
        e = atf_mlp_read(o->mlp_path, &m, err);
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
        if ((e = check_no_activation(o, err)) || (e = atf_mlp_read(o->mlp_path, &m, err)))
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
    if ((e = apply_layer_options(o, &arch, err)) || (e = atf_arch_fit_task(&arch, task, err)))
        return e;
    return atf_mlp_create(&arch, o->seed, out, err);
}
