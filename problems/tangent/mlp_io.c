/* mlp_io.c — MLP files (docs/formats.md "MLP file"): root attributes format = "atf-mlp",
 * activation (one spec, or one per hidden layer separated by ';'), bias (0/1: every layer or
 * none), bias_layers (1-based list, written when only some layers have a bias),
 * parameterization; datasets /W0.. [P_ℓ, Q_ℓ] (input × output) and /bℓ [Q_ℓ] for the layers with
 * a bias. Files without bias_layers (older ones) have a bias on every layer or none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_mlp.h"
#include "h5io.h"
#include "mlp_internal.h"

/* Names are 0-based (/W0, /W1, ...) as docs/formats.md lists them; 1-based files are accepted
 * too. */
static int first_index(hid_t f)
{
    return h5io_exists(f, "/W0") ? 0 : 1;
}

/* Widths from the shapes of /W0, /W1, ... (consecutive layers must chain). */
static atf_error read_widths(const h5io_reader *rd, int base, atf_arch *arch)
{
    char name[H5IO_PATHLEN];
    int L = 0;
    for (;; L++) {
        h5io_path(name, "/W%d", L + base);
        if (!h5io_exists(rd->f, name))
            break;
        if (L == ATF_MAX_LAYERS) {
            atf_errorf(rd->err, "%s: more than %d layers", rd->fname, ATF_MAX_LAYERS);
            return ATF_E_INPUT;
        }
        int64_t d[2];
        atf_error e = h5io_shape(rd->f, rd->fname, name, 2, d, rd->err);
        if (e)
            return e;
        if (d[0] < 1 || d[1] < 1 || d[0] > (1 << 24) || d[1] > (1 << 24)) {
            atf_errorf(rd->err, "%s: %s: shape [%lld, %lld] is empty or too large", rd->fname,
                       name, (long long)d[0], (long long)d[1]);
            return ATF_E_INPUT;
        }
        if (L > 0 && d[0] != arch->widths[L]) {
            atf_errorf(rd->err, "%s: %s: shape [%lld, %lld] but the previous layer has %d "
                       "outputs", rd->fname, name, (long long)d[0], (long long)d[1],
                       arch->widths[L]);
            return ATF_E_INPUT;
        }
        arch->widths[L] = (int)d[0];
        arch->widths[L + 1] = (int)d[1];
    }
    if (L == 0) {
        atf_errorf(rd->err, "%s: /W0: missing (no weight matrices)", rd->fname);
        return ATF_E_INPUT;
    }
    arch->L = L;
    return ATF_OK;
}

/* Layer l's weights (shape already checked) and, with biases, its bias [Q_l]. */
static atf_error read_layer(const h5io_reader *rd, int base, int l, atf_mlp *m)
{
    char wname[H5IO_PATHLEN], bname[H5IO_PATHLEN], outputs[H5IO_PATHLEN + 16];
    h5io_path(wname, "/W%d", l + base);
    int64_t dims[2] = {m->arch.widths[l], m->arch.widths[l + 1]};
    double *v;
    atf_error e = h5io_read_doubles(rd->f, rd->fname, wname, 2, dims, &v, rd->err);
    if (e)
        return e;
    free(m->W[l]);
    m->W[l] = v;
    if (!m->arch.bias[l])
        return ATF_OK;
    h5io_path(bname, "/b%d", l + base);
    snprintf(outputs, sizeof outputs, "the outputs of %s", wname);
    const char *const what[1] = {outputs};
    if ((e = h5io_read_checked(rd->f, rd->fname, bname, 1, dims + 1, what, &v, rd->err)))
        return e;
    free(m->b[l]);
    m->b[l] = v;
    return ATF_OK;
}

static atf_error read_layers(const h5io_reader *rd, int base, atf_arch *arch, atf_mlp **out)
{
    /* allocation only: the weights are overwritten below */
    atf_error e = atf_mlp_create(arch, 0, out, rd->err);
    if (e == ATF_E_NOMEM)
        atf_errorf(rd->err, "%s: /W%d to /W%d: out of memory (%.0f bytes for the weights)",
                   rd->fname, base, base + arch->L - 1, mlp_weight_bytes(arch));
    for (int l = 0; !e && l < arch->L; l++)
        e = read_layer(rd, base, l, *out);
    if (e) {
        atf_mlp_free(*out);
        *out = NULL;
    }
    return e;
}

/* A parser's message without its leading "activation: " or "bias: " (the attribute is named). */
static const char *without_item(const char *msg)
{
    const char *colon = strstr(msg, ": ");
    return colon && (size_t)(colon - msg) <= strlen("activation") ? colon + 2 : msg;
}

/* The per-layer bias flags: the bias_layers list when present, else bias 0/1 for all layers. */
static atf_error read_bias(const h5io_reader *rd, atf_arch *arch)
{
    char buf[256], err2[ATF_ERRLEN];
    if (h5io_attr_exists(rd->f, "/", "bias_layers")) {
        atf_error e = h5io_attr_string_or(rd->f, rd->fname, "/", "bias_layers", "", buf,
                                          sizeof buf, rd->err);
        char list[sizeof buf + 8]; /* a plain list: "1" is layer 1 here, not every layer */
        snprintf(list, sizeof list, "layers:%s", buf);
        if (!e && buf[0] && atf_arch_parse_bias(list, arch, err2)) {
            atf_errorf(rd->err, "%s: / attribute 'bias_layers': %s", rd->fname,
                       without_item(err2));
            e = ATF_E_INPUT;
        }
        if (!e && !buf[0])
            memset(arch->bias, 0, sizeof arch->bias);
        return e;
    }
    int64_t bias = 0;
    atf_error e = ATF_OK;
    if (h5io_attr_exists(rd->f, "/", "bias"))
        e = h5io_attr_int(rd->f, rd->fname, "/", "bias", &bias, rd->err);
    if (!e && bias != 0 && bias != 1) {
        atf_errorf(rd->err, "%s: / attribute 'bias': %lld (expected 0 or 1)", rd->fname,
                   (long long)bias);
        e = ATF_E_INPUT;
    }
    for (int l = 0; !e && l < arch->L; l++)
        arch->bias[l] = (unsigned char)bias;
    return e;
}

/* The activations (after the widths: their number depends on L). */
static atf_error read_activations(const h5io_reader *rd, atf_arch *arch)
{
    char buf[ATF_MAX_LAYERS * ATF_ACTIVATION_SPECLEN], err2[ATF_ERRLEN];
    atf_error e = h5io_attr_string_or(rd->f, rd->fname, "/", "activation", "relu", buf,
                                      sizeof buf, rd->err);
    if (!e && atf_activations_parse(buf, arch->L, arch->act, err2)) {
        atf_errorf(rd->err, "%s: / attribute 'activation': %s", rd->fname, without_item(err2));
        e = ATF_E_INPUT;
    }
    return e;
}

static atf_error read_mlp(const h5io_reader *rd, void *ctx)
{
    char buf[64];
    atf_error e = h5io_check_format(rd->f, rd->fname, "atf-mlp", rd->err);
    atf_arch arch = {0};
    snprintf(arch.origin, sizeof arch.origin, "%s", rd->fname);
    if (!e)
        e = h5io_attr_string_or(rd->f, rd->fname, "/", "parameterization", "standard", buf,
                                sizeof buf, rd->err);
    if (!e && atf_param_parse(buf, &arch.param, NULL)) {
        atf_errorf(rd->err, "%s: / attribute 'parameterization': '%s' (expected standard or "
                   "ntk)", rd->fname, buf);
        e = ATF_E_INPUT;
    }
    int base = e ? 0 : first_index(rd->f);
    if (!e)
        e = read_widths(rd, base, &arch);
    if (!e)
        e = read_activations(rd, &arch);
    if (!e)
        e = read_bias(rd, &arch);
    if (!e)
        e = read_layers(rd, base, &arch, ctx);
    return e;
}

atf_error atf_mlp_read(const char *path, atf_mlp **out, char *err)
{
    *out = NULL;
    return h5io_read_file(path, read_mlp, out, err);
}

static void put_mlp(h5io_out *o, const void *ctx)
{
    const atf_mlp *m = ctx;
    h5io_put_string(o, "/", "format", "atf-mlp");
    h5io_put_int(o, "/", "version", 1);
    char acts[ATF_MAX_LAYERS * ATF_ACTIVATION_SPECLEN], layers[64] = "";
    atf_arch_activation_specs(&m->arch, acts, sizeof acts);
    h5io_put_string(o, "/", "activation", acts[0] ? acts : "relu");
    int nb = atf_arch_has_bias(&m->arch);
    h5io_put_int(o, "/", "bias", nb > 0);
    for (int l = 0, n = 0; nb > 0 && nb < m->arch.L && l < m->arch.L; l++)
        if (m->arch.bias[l])
            n += snprintf(layers + n, sizeof layers - (size_t)n, "%s%d", n ? "," : "", l + 1);
    if (layers[0]) /* a subset: older readers, which know only bias 0/1, do not apply */
        h5io_put_string(o, "/", "bias_layers", layers);
    h5io_put_string(o, "/", "parameterization", atf_param_name(m->arch.param));
    char name[H5IO_PATHLEN];
    for (int l = 0; l < m->arch.L; l++) {
        int64_t dims[2] = {m->arch.widths[l], m->arch.widths[l + 1]};
        h5io_path(name, "/W%d", l);
        h5io_put_doubles(o, name, 2, dims, m->W[l]);
        h5io_path(name, "/b%d", l);
        if (m->b[l])
            h5io_put_doubles(o, name, 1, dims + 1, m->b[l]);
    }
}

atf_error atf_mlp_write(const char *path, const atf_mlp *m, char *err)
{
    return h5io_write_file(path, put_mlp, m, err);
}
