/* dataset_h5.c — user data sets in HDF5 (docs/formats.md "Dataset file": /X [N, D], /Y [N, C],
 * optional /labels [N]).
 * /Y may be omitted when /labels is present (label targets are then built from the labels). */
#include <stdlib.h>
#include <string.h>

#include "atf_data.h"
#include "h5io.h"

static atf_error read_dataset(const h5io_reader *rd, void *ctx)
{
    atf_dataset *out = ctx;
    int64_t xd[2], yd[2];
    atf_error e = h5io_shape(rd->f, rd->fname, "/X", 2, xd, rd->err);
    if (e)
        return e;
    if (xd[0] < 1 || xd[1] < 1 || xd[0] > (1 << 30) || xd[1] > (1 << 30)) {
        atf_errorf(rd->err, "%s: /X: shape [%lld, %lld] is empty or too large", rd->fname,
                   (long long)xd[0], (long long)xd[1]);
        return ATF_E_INPUT;
    }
    out->N = (int)xd[0];
    out->D = (int)xd[1];
    int has_y = h5io_exists(rd->f, "/Y"), has_labels = h5io_exists(rd->f, "/labels");
    if (!has_y && !has_labels) {
        atf_errorf(rd->err, "%s: /Y: missing (and no /labels to build targets from)",
                   rd->fname);
        return ATF_E_INPUT;
    }
    if ((e = h5io_read_doubles(rd->f, rd->fname, "/X", 2, xd, &out->X, rd->err)))
        return e;
    if (has_y) {
        if ((e = h5io_shape(rd->f, rd->fname, "/Y", 2, yd, rd->err)))
            return e;
        if (yd[0] != xd[0] || yd[1] < 1 || yd[1] > (1 << 20)) {
            atf_errorf(rd->err, "%s: /Y: shape [%lld, %lld] but /X has %lld rows", rd->fname,
                       (long long)yd[0], (long long)yd[1], (long long)xd[0]);
            return ATF_E_INPUT;
        }
        out->C = (int)yd[1];
        if ((e = h5io_read_doubles(rd->f, rd->fname, "/Y", 2, yd, &out->Y, rd->err)))
            return e;
    }
    if (has_labels) {
        int64_t ld[1];
        if ((e = h5io_shape(rd->f, rd->fname, "/labels", 1, ld, rd->err)))
            return e;
        if (ld[0] != xd[0]) {
            atf_errorf(rd->err, "%s: /labels: length %lld but /X has %lld rows", rd->fname,
                       (long long)ld[0], (long long)xd[0]);
            return ATF_E_INPUT;
        }
        if ((e = h5io_read_ints(rd->f, rd->fname, "/labels", ld[0], &out->labels, rd->err)))
            return e;
        for (int i = 0; i < out->N; i++) {
            if (out->labels[i] < 0) {
                atf_errorf(rd->err, "%s: /labels: negative label %d at index %d", rd->fname,
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
    atf_error e = h5io_read_file(path, read_dataset, out, err);
    if (e)
        atf_dataset_free(out);
    return e;
}
