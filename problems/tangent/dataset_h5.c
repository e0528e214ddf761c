/* dataset_h5.c — user data sets in HDF5 (SPEC §6: /X [N, D], /Y [N, C], optional /labels [N]).
 * /Y may be omitted when /labels is present (label targets are then built from the labels). */
#include <stdlib.h>
#include <string.h>

#include "atf_tangent.h"
#include "th5.h"

static atf_error read_dataset(hid_t f, const char *path, atf_dataset *out, char *err)
{
    int64_t xd[2], yd[2];
    atf_error e = th5_shape(f, path, "/X", 2, xd, err);
    if (e)
        return e;
    if (xd[0] < 1 || xd[1] < 1 || xd[0] > (1 << 30) || xd[1] > (1 << 30)) {
        atf_errorf(err, "%s: /X: shape [%lld, %lld] is empty or too large", path,
                   (long long)xd[0], (long long)xd[1]);
        return ATF_E_INPUT;
    }
    out->N = (int)xd[0];
    out->D = (int)xd[1];
    int has_y = th5_exists(f, "/Y"), has_labels = th5_exists(f, "/labels");
    if (!has_y && !has_labels) {
        atf_errorf(err, "%s: /Y: missing (and no /labels to build targets from)", path);
        return ATF_E_INPUT;
    }
    if ((e = th5_read_doubles(f, path, "/X", xd[0] * xd[1], &out->X, err)))
        return e;
    if (has_y) {
        if ((e = th5_shape(f, path, "/Y", 2, yd, err)))
            return e;
        if (yd[0] != xd[0] || yd[1] < 1 || yd[1] > (1 << 20)) {
            atf_errorf(err, "%s: /Y: shape [%lld, %lld] but /X has %lld rows", path,
                       (long long)yd[0], (long long)yd[1], (long long)xd[0]);
            return ATF_E_INPUT;
        }
        out->C = (int)yd[1];
        if ((e = th5_read_doubles(f, path, "/Y", yd[0] * yd[1], &out->Y, err)))
            return e;
    }
    if (has_labels) {
        int64_t ld[1];
        if ((e = th5_shape(f, path, "/labels", 1, ld, err)))
            return e;
        if (ld[0] != xd[0]) {
            atf_errorf(err, "%s: /labels: length %lld but /X has %lld rows", path,
                       (long long)ld[0], (long long)xd[0]);
            return ATF_E_INPUT;
        }
        if ((e = th5_read_ints(f, path, "/labels", ld[0], &out->labels, err)))
            return e;
        for (int i = 0; i < out->N; i++) {
            if (out->labels[i] < 0) {
                atf_errorf(err, "%s: /labels: negative label %d at index %d", path,
                           out->labels[i], i);
                return ATF_E_INPUT;
            }
        }
    }
    return ATF_OK;
}

atf_error atf_dataset_read_h5(const char *path, atf_dataset *out, char *err)
{
    memset(out, 0, sizeof *out);
    th5_quiet q;
    th5_quiet_begin(&q);
    hid_t f;
    atf_error e = th5_open_read(path, &f, err);
    if (!e) {
        e = read_dataset(f, path, out, err);
        H5Fclose(f);
    }
    th5_quiet_end(&q);
    if (e)
        atf_dataset_free(out);
    return e;
}
