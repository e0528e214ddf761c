/* shard.c — the cut of the examples into chunks and the chunks' shares among processes
 * (atf_problem.h, "examples spread over processes"; the sums themselves: atf_shard.h and
 * operators.c). */
#include "atf_problem.h"

/* Chunks of at least 32 examples (below that a chunk's GEMM is mostly overhead) and at most
 * 256 of them, so that up to 256 processes can share a large problem. */
#define SHARD_MAX_CHUNKS 256
#define SHARD_MIN_CHUNK 32

int atf_shard_chunk(int N)
{
    int c = (int)(((int64_t)N + SHARD_MAX_CHUNKS - 1) / SHARD_MAX_CHUNKS);
    return c < SHARD_MIN_CHUNK ? SHARD_MIN_CHUNK : c;
}

int atf_shard_count(int N)
{
    int c = atf_shard_chunk(N);
    return N < 1 ? 0 : (int)(((int64_t)N + c - 1) / c);
}

void atf_shard_share(int N, int rank, int size, int *first, int *count)
{
    int nch = atf_shard_count(N), c = atf_shard_chunk(N);
    int64_t c0 = (int64_t)nch * rank / size, c1 = (int64_t)nch * (rank + 1) / size;
    int64_t i0 = c0 * c < N ? c0 * c : N, i1 = c1 * c < N ? c1 * c : N;
    *first = (int)i0;
    *count = (int)(i1 - i0);
}

atf_error atf_shard_range(int N, int rank, int size, int *first, int *count, char *err)
{
    int nch = atf_shard_count(N), c = atf_shard_chunk(N);
    *first = *count = 0;
    if (size < 1 || rank < 0 || rank >= size) {
        atf_errorf(err, "shards: process %d of %d does not exist", rank, size);
        return ATF_E_USAGE;
    }
    if (size > nch) {
        atf_errorf(err, "shards: %d examples make %d chunks of %d; %d processes cannot share "
                   "them (at most %d)", N, nch, c, size, nch);
        return ATF_E_USAGE;
    }
    atf_shard_share(N, rank, size, first, count);
    return ATF_OK;
}
