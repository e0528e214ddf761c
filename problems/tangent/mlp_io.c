/* mlp_io.c — MLP files (SPEC §6): root attributes format = "atf-mlp", activation = "relu",
 * bias (0/1), parameterization; datasets /W0.. [P_ℓ, Q_ℓ] (input × output) and /b0.. [Q_ℓ]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_tangent.h"
#include "th5.h"

/* Names are 0-based (/W0, /W1, ...) as SPEC §6 lists them; 1-based files are accepted too. */
static int first_index(hid_t f)
{
    return th5_exists(f, "/W0") ? 0 : 1;
}

static atf_error read_layers(hid_t f, const char *path, atf_arch *arch, atf_mlp **out, char *err)
{
    int base = first_index(f);
    char name[32];
    int L = 0;
    for (;; L++) {
        snprintf(name, sizeof name, "/W%d", L + base);
        if (!th5_exists(f, name))
            break;
        if (L == ATF_MAX_LAYERS) {
            atf_errorf(err, "%s: more than %d layers", path, ATF_MAX_LAYERS);
            return ATF_E_INPUT;
        }
        int64_t d[2];
        atf_error e = th5_shape(f, path, name, 2, d, err);
        if (e)
            return e;
        if (d[0] < 1 || d[1] < 1 || d[0] > (1 << 24) || d[1] > (1 << 24)) {
            atf_errorf(err, "%s: %s: shape [%lld, %lld] is empty or too large", path, name,
                       (long long)d[0], (long long)d[1]);
            return ATF_E_INPUT;
        }
        if (L > 0 && d[0] != arch->widths[L]) {
            atf_errorf(err, "%s: %s: shape [%lld, %lld] but the previous layer has %d outputs",
                       path, name, (long long)d[0], (long long)d[1], arch->widths[L]);
            return ATF_E_INPUT;
        }
        arch->widths[L] = (int)d[0];
        arch->widths[L + 1] = (int)d[1];
    }
    if (L == 0) {
        atf_errorf(err, "%s: /W0: missing (no weight matrices)", path);
        return ATF_E_INPUT;
    }
    arch->L = L;
    atf_error e = atf_mlp_create(arch, 0, out, err); /* allocation; weights overwritten */
    for (int l = 0; !e && l < L; l++) {
        double *w = NULL;
        snprintf(name, sizeof name, "/W%d", l + base);
        e = th5_read_doubles(f, path, name, (int64_t)arch->widths[l] * arch->widths[l + 1], &w,
                             err);
        if (!e) {
            free((*out)->W[l]);
            (*out)->W[l] = w;
        }
        snprintf(name, sizeof name, "/b%d", l + base);
        if (!e && arch->bias) {
            e = th5_read_doubles(f, path, name, arch->widths[l + 1], &w, err);
            if (!e) {
                free((*out)->b[l]);
                (*out)->b[l] = w;
            }
        }
    }
    if (e) {
        atf_mlp_free(*out);
        *out = NULL;
    }
    return e;
}

static atf_error read_mlp(hid_t f, const char *path, atf_mlp **out, char *err)
{
    char buf[64];
    atf_error e = th5_attr_string(f, path, "/", "format", buf, sizeof buf, err);
    if (!e && strcmp(buf, "atf-mlp") != 0) {
        atf_errorf(err, "%s: / attribute 'format': '%s' but expected 'atf-mlp'", path, buf);
        e = ATF_E_INPUT;
    }
    if (!e && th5_attr_exists(f, "/", "activation")) {
        e = th5_attr_string(f, path, "/", "activation", buf, sizeof buf, err);
        if (!e && strcmp(buf, "relu") != 0) {
            atf_errorf(err, "%s: / attribute 'activation': '%s' not supported (only relu)", path,
                       buf);
            e = ATF_E_INPUT;
        }
    }
    atf_arch arch = {0};
    int64_t bias = 0;
    if (!e && th5_attr_exists(f, "/", "bias"))
        e = th5_attr_int(f, path, "/", "bias", &bias, err);
    if (!e && bias != 0 && bias != 1) {
        atf_errorf(err, "%s: / attribute 'bias': %lld (expected 0 or 1)", path, (long long)bias);
        e = ATF_E_INPUT;
    }
    arch.bias = (int)bias;
    arch.param = ATF_PARAM_STANDARD;
    if (!e && th5_attr_exists(f, "/", "parameterization")) {
        e = th5_attr_string(f, path, "/", "parameterization", buf, sizeof buf, err);
        if (!e && atf_param_parse(buf, &arch.param, NULL)) {
            atf_errorf(err, "%s: / attribute 'parameterization': '%s' (expected standard or ntk)",
                       path, buf);
            e = ATF_E_INPUT;
        }
    }
    if (!e)
        e = read_layers(f, path, &arch, out, err);
    return e;
}

atf_error atf_mlp_read(const char *path, atf_mlp **out, char *err)
{
    *out = NULL;
    th5_quiet q;
    th5_quiet_begin(&q);
    hid_t f;
    atf_error e = th5_open_read(path, &f, err);
    if (!e) {
        e = read_mlp(f, path, out, err);
        H5Fclose(f);
    }
    th5_quiet_end(&q);
    return e;
}

atf_error atf_mlp_write(const char *path, const atf_mlp *m, char *err)
{
    th5_quiet q;
    th5_quiet_begin(&q);
    th5_writer w;
    atf_error e = th5_create(&w, path, err);
    if (e) {
        th5_quiet_end(&q);
        return e;
    }
    hid_t f = w.file;
    int bad = th5_write_attr_string(f, "/", "format", "atf-mlp") ||
              th5_write_attr_int(f, "/", "version", 1) ||
              th5_write_attr_string(f, "/", "activation", "relu") ||
              th5_write_attr_int(f, "/", "bias", m->arch.bias) ||
              th5_write_attr_string(f, "/", "parameterization", atf_param_name(m->arch.param));
    char name[32];
    for (int l = 0; !bad && l < m->arch.L; l++) {
        int64_t dims[2] = {m->arch.widths[l], m->arch.widths[l + 1]};
        snprintf(name, sizeof name, "/W%d", l);
        bad = th5_write_doubles(f, name, 2, dims, m->W[l]);
        snprintf(name, sizeof name, "/b%d", l);
        if (!bad && m->b[l])
            bad = th5_write_doubles(f, name, 1, dims + 1, m->b[l]);
    }
    if (bad) {
        th5_abort(&w);
        atf_errorf(err, "%s: cannot write the network", path);
        e = ATF_E_IO;
    } else {
        e = th5_commit(&w, err);
    }
    th5_quiet_end(&q);
    return e;
}
