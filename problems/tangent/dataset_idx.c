/* dataset_idx.c — IDX files (LeCun's MNIST format), plain or gzip-compressed.
 *
 * Layout: two zero bytes, a type byte (0x08 = unsigned byte, the only type MNIST-like data
 * uses), the number of dimensions, then each dimension as a big-endian uint32, then the data.
 * zlib's gzread reads plain files transparently, so compression is detected from the content. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "atf_data.h"

#define IDX_MAX_BYTES ((int64_t)1 << 34) /* refuse absurd headers before allocating */

/* Read exactly n bytes; on failure describe why (end of data, or zlib's reason). */
static atf_error read_exact(gzFile f, const char *path, const char *what, void *buf, int64_t n,
                            char *err)
{
    unsigned char *p = buf;
    while (n > 0) {
        unsigned chunk = n > (1 << 30) ? (1u << 30) : (unsigned)n;
        int got = gzread(f, p, chunk);
        if (got <= 0) {
            int zerr = Z_OK;
            const char *msg = gzerror(f, &zerr);
            if (zerr != Z_OK && zerr != Z_STREAM_END)
                atf_errorf(err, "%s: %s: corrupt or truncated gzip stream (%s)", path, what, msg);
            else
                atf_errorf(err, "%s: %s: truncated file (ends early)", path, what);
            return ATF_E_INPUT;
        }
        p += got;
        n -= got;
    }
    return ATF_OK;
}

static atf_error read_header(gzFile f, const char *path, atf_idx *out, char *err)
{
    unsigned char magic[4];
    atf_error e = read_exact(f, path, "header", magic, 4, err);
    if (e)
        return e;
    if (magic[0] != 0 || magic[1] != 0) {
        atf_errorf(err, "%s: not an IDX file (bad magic number)", path);
        return ATF_E_INPUT;
    }
    if (magic[2] != 0x08) {
        atf_errorf(err, "%s: IDX data type 0x%02x not supported (only unsigned byte, 0x08)", path,
                   magic[2]);
        return ATF_E_INPUT;
    }
    if (magic[3] < 1 || magic[3] > 4) {
        atf_errorf(err, "%s: IDX header: %d dimensions (expected 1 to 4)", path, magic[3]);
        return ATF_E_INPUT;
    }
    out->ndims = magic[3];
    out->count = 1;
    for (int i = 0; i < out->ndims; i++) {
        unsigned char b[4];
        e = read_exact(f, path, "header", b, 4, err);
        if (e)
            return e;
        uint32_t d = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
        if (d == 0 || d > (1u << 30)) {
            atf_errorf(err, "%s: IDX header: dimension %d is %u", path, i, d);
            return ATF_E_INPUT;
        }
        out->dims[i] = (int)d;
        out->count *= d;
        if (out->count > IDX_MAX_BYTES) {
            atf_errorf(err, "%s: IDX header: implausible size", path);
            return ATF_E_INPUT;
        }
    }
    return ATF_OK;
}

atf_error atf_idx_read(const char *path, atf_idx *out, char *err)
{
    memset(out, 0, sizeof *out);
    gzFile f = gzopen(path, "rb");
    if (!f) {
        atf_errorf(err, "%s: cannot open (%s)", path, errno ? strerror(errno) : "zlib error");
        return ATF_E_INPUT;
    }
    atf_error e = read_header(f, path, out, err);
    if (!e) {
        out->data = malloc((size_t)out->count);
        if (!out->data) {
            atf_errorf(err, "%s: out of memory for %lld bytes", path, (long long)out->count);
            e = ATF_E_NOMEM;
        }
    }
    if (!e)
        e = read_exact(f, path, "data", out->data, out->count, err);
    if (!e) {
        unsigned char extra;
        int got = gzread(f, &extra, 1);
        int zerr = Z_OK;
        gzerror(f, &zerr);
        if (got > 0) {
            atf_errorf(err, "%s: data longer than the header's dimensions", path);
            e = ATF_E_INPUT;
        } else if (got < 0 || (zerr != Z_OK && zerr != Z_STREAM_END)) {
            atf_errorf(err, "%s: corrupt gzip stream after the data", path);
            e = ATF_E_INPUT;
        }
    }
    gzclose(f);
    if (e)
        atf_idx_free(out);
    return e;
}

void atf_idx_free(atf_idx *idx)
{
    free(idx->data);
    memset(idx, 0, sizeof *idx);
}
