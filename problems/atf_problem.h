/* atf_problem.h — tangent-feature constraint problems (docs/math.md §1, docs/formats.md).
 *
 * A problem holds M = N·C constraint rows (row m = i·C + k: example i, output k), the right-hand
 * side r and a list of blocks. Each block is a matrix variable B (rows × cols) with its own
 * penalty and one of three constraint operators A_b: dense, sparse (CSR) or factored
 * (G_m = h_i δ_mᵀ). Ownership: a problem owns all its arrays; atf_problem_free releases them. */
#ifndef ATF_PROBLEM_H
#define ATF_PROBLEM_H

#include <stdint.h>

#include "atf_error.h"
#include "atf_penalty.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATF_NAMELEN 64

typedef enum { ATF_OP_DENSE = 0, ATF_OP_SPARSE, ATF_OP_FACTORED } atf_operator_kind;

/* Per-block structure: `matrix` (spectral penalty on B) or `diagonal` (every entry its own 1×1
 * block: Σ ω̃(|B_ab|)). The global `full` structure (Theorem 1) is a solver setting. */
typedef enum { ATF_STRUCT_MATRIX = 0, ATF_STRUCT_DIAGONAL } atf_structure;

typedef struct {
    char name[ATF_NAMELEN];
    int index;                /* order of the block (attribute `index`) */
    int rows, cols;           /* B is rows × cols (P_ℓ × Q_ℓ) */
    int N, C, M;              /* copies of the problem's sizes, M = N·C */
    atf_penalty penalty;
    char penalty_spec[ATF_PENALTY_SPECLEN];
    atf_structure structure;
    atf_operator_kind kind;
    /* dense: J [M × rows·cols] row-major, row m = G_m flattened row-major (entry (a,b) at a·cols+b) */
    double *J;
    /* sparse: the same matrix in CSR */
    int64_t nnz;
    int64_t *indptr;          /* [M+1] */
    int64_t *indices;         /* [nnz], column indices in [0, rows·cols) */
    double *data;             /* [nnz] */
    /* factored: H [N × rows] (layer inputs), D [M × cols] (cotangents) */
    double *H;
    double *D;
} atf_block;

/* ---- fingerprints and provenance (docs/formats.md "Provenance") ----
 * A fingerprint is the XXH3-128 hash of a problem's content (r, every block's name, shape,
 * operator kind, structure and operator data in block order, and the test split), written as 32
 * lowercase hex digits. Penalties are not part of it: they are solver settings (--penalty). */
#define ATF_FINGERPRINT_LEN 33   /* 32 hex digits + NUL */
#define ATF_COMMANDLEN 2048

typedef enum {
    ATF_FINGERPRINT_ABSENT = 0,  /* the file has no `fingerprint` (written by an earlier atf) */
    ATF_FINGERPRINT_MATCHES,     /* stored value = the content's */
    ATF_FINGERPRINT_DIFFERS      /* the file was edited after atf wrote it */
} atf_fingerprint_state;

/* Where a problem came from. Empty strings / has_* = 0 mean "not recorded" (the writer then
 * omits the attribute), so a zeroed struct records nothing. The writer always records its own
 * atf version. */
typedef struct {
    char atf_version[32];             /* the atf that wrote the file (set by the writer) */
    char command[ATF_COMMANDLEN];     /* the command line that wrote it */
    char data_source[1024];           /* e.g. "mnist:data/mnist", "synthetic:d=16" */
    int has_data_seed;
    int64_t data_seed;
    int has_standardize;
    int standardize;                  /* 0/1: per-image standardisation of the inputs */
    char mlp_fingerprint[ATF_FINGERPRINT_LEN]; /* XXH3-128 of the network's weights */
} atf_provenance;

typedef struct atf_problem {
    int N, C, M;
    double *r;                /* [M] right-hand side */
    double *y;                /* [N × C] targets, optional (NULL) */
    double *f0;               /* [N × C] initial outputs, optional (NULL) */
    int *labels;              /* [N] class labels, optional (NULL) */
    int nblocks;
    atf_block *blocks;        /* sorted by index */
    struct atf_problem *test; /* optional held-out split (`/test` group): same block names and
                                 shapes, its own N, r = y − f0; penalties unused */
    /* Set by atf_problem_read: the fingerprint recomputed from the content read (the file's own
     * attribute is only compared, see fingerprint_state); "" for problems built in code (use
     * atf_problem_fingerprint). Code that changes r, an operator or the test split afterwards
     * clears it, so that results compute the fingerprint of what they solved. */
    char fingerprint[ATF_FINGERPRINT_LEN];
    atf_fingerprint_state fingerprint_state;
    atf_provenance prov;      /* root problems only (unused in `test`) */
    /* A shard (atf_problem_read_shard, for a process of a job that spreads the examples over
     * processes): its factored blocks hold the H rows of examples shard_first …
     * shard_first + shard_count − 1 and their D rows only, N, M, r, y, f0 and labels are the
     * whole problem's, and there is no test split. shard_count = 0 (every other problem): all
     * examples are held. Functions that need every example refuse a shard. */
    int shard_first, shard_count;
} atf_problem;

/* ---- files (docs/formats.md). Every error names the file, the item and the reason. ---- */

/* Read and fully validate a problem file: format/version, every dataset's presence and shape,
 * positive sizes, finite values, known operator/structure, penalty strings, CSR consistency. */
atf_error atf_problem_read(const char *path, atf_problem **out, char *err);

/* Write atomically (temporary file in the same directory, then rename). A shard is refused
 * (ATF_E_USAGE). */
atf_error atf_problem_write(const char *path, const atf_problem *prob, char *err);

void atf_problem_free(atf_problem *prob);

/* The content fingerprint of a problem (see above) into out[ATF_FINGERPRINT_LEN]. The writer
 * stores it as the root attribute `fingerprint`; the reader recomputes it. ATF_E_NOMEM; for a
 * shard ATF_E_USAGE and out = "" (it lacks the other examples' rows: atf_problem_read_shard
 * with fingerprint = 1 computes the whole file's). */
atf_error atf_problem_fingerprint(const atf_problem *prob, char *out);

/* Streaming XXH3-128 over a canonical byte form (integers as int64 and doubles as IEEE-754
 * binary64, both little-endian whatever the host; strings as their length then their bytes), so
 * that equal content hashes equally everywhere. Used for problems and networks
 * (atf_mlp_fingerprint). A NULL hasher (out of memory) ignores updates and finishes with
 * ATF_E_NOMEM. */
typedef struct atf_hasher atf_hasher;
atf_hasher *atf_hasher_new(const char *domain);
void atf_hasher_int(atf_hasher *h, int64_t v);
void atf_hasher_string(atf_hasher *h, const char *s);
void atf_hasher_doubles(atf_hasher *h, const double *x, int64_t n);
void atf_hasher_int64s(atf_hasher *h, const int64_t *x, int64_t n);
void atf_hasher_ints(atf_hasher *h, const int *x, int64_t n);
/* Digest as 32 hex digits into out[ATF_FINGERPRINT_LEN] and free the hasher. */
atf_error atf_hasher_finish(atf_hasher *h, char *out);

/* Allocate a problem of N examples, C outputs and nblocks blocks for filling in code: r zeroed,
 * blocks zeroed with index = position, N/C/M copies set, penalty `sq`, structure matrix. The
 * caller sets names, sizes, kind and the operator arrays, which must come from malloc (the
 * problem owns them). NULL if a size is not positive or memory is short. */
atf_problem *atf_problem_new(int N, int C, int nblocks);

/* Check an in-memory problem as the reader would (used for problems built in code). `what`
 * names it in messages (e.g. the file name). A shard is checked as one: examples shard_first …
 * shard_first + shard_count − 1 within N, no test split, factored blocks of shard_count
 * examples (r, y, f0, labels of all N). */
atf_error atf_problem_validate(const atf_problem *prob, const char *what, char *err);

/* Override every block's penalty and/or structure (NULL / -1 keep the file's). */
atf_error atf_problem_set_penalty(atf_problem *prob, const char *spec, char *err);
void atf_problem_set_structure(atf_problem *prob, atf_structure s);

/* The examples idx[0..n) of prob's own split (in that order; an index may repeat) as a new
 * problem: for each chosen example i its rows m = i·C + k of r, y, f0, of every dense J and
 * sparse (CSR) operator and of every factored D, row i of every factored H, and labels[i]; block
 * names, indices, shapes, penalties and structures and the provenance are copied. prob->test is
 * not carried (out->test is NULL: selecting all of a test split's examples copies it). The new
 * problem's fingerprint is "" (its content differs: atf_problem_fingerprint computes it).
 * ATF_E_USAGE for n < 1, an index outside [0, N), n·C beyond INT_MAX or a shard; ATF_E_NOMEM. */
atf_error atf_problem_select_examples(const atf_problem *prob, const int *idx, int n,
                                      atf_problem **out, char *err);

/* ---- examples spread over processes (docs/solver.md, "Several processes") ----
 * The N examples are cut into chunks of atf_shard_chunk(N) examples (the last may be shorter),
 * a cut that depends on N only. Process `rank` of `size` holds a contiguous run of whole chunks
 * (atf_shard_range); sums over examples are formed chunk by chunk and the chunks' partial sums
 * are added in double-double arithmetic, so that a sum does not depend on how many processes
 * share the examples. */
int atf_shard_chunk(int N);
int atf_shard_count(int N); /* the number of chunks */
/* Examples [*first, *first + *count) of process rank of size. ATF_E_USAGE (message naming the
 * sizes) when size exceeds the number of chunks or rank is outside 0 … size − 1. */
atf_error atf_shard_range(int N, int rank, int size, int *first, int *count, char *err);
/* The same share without the check (0 ≤ rank < size assumed): with more processes than
 * chunks, some get none (*count = 0) — a minibatch or a split scored over processes, where
 * idle processes are allowed. */
void atf_shard_share(int N, int rank, int size, int *first, int *count);

/* A dense symmetric M × M matrix spread over processes in ScaLAPACK's two-dimensional
 * block-cyclic layout (docs/record/solver.md §19, "The Gram over processes"): square blocks of nb
 * rows and columns, block (I, J) on grid row I mod nprow and grid column J mod npcol; process
 * `rank` sits at grid row rank / npcol, column rank mod npcol (BLACS's row-major grid). The solver
 * sets nb and allocates `a`; open fills the rest. */
typedef struct {
    int nb;                /* rows (and columns) per block */
    int nprow, npcol;      /* the process grid */
    int myrow, mycol;      /* this process's place in it */
    int lrows, lcols;      /* the local rows and columns (ScaLAPACK's numroc) */
    double *a;             /* the local part: lrows × lcols, column-major, leading dimension
                              max(1, lrows) */
    void *handle;          /* the implementation's (grid, descriptors, workspace) */
} atf_dist_matrix;

/* What the Gram method (admm) needs of processes: a distributed dense factorisation and the
 * exchange of the rows that form its tiles. Every function is collective: every process calls
 * it at the same point with the same sizes. Return values are this process's own; the solver
 * agrees on them (atf_processes.max) before it acts on one. */
typedef struct {
    /* The layout of an M × M matrix in blocks of m->nb over all the processes (m's grid, place,
     * local sizes and handle). 0, or nonzero when this process could not (out of memory). */
    int (*open)(void *ctx, int M, atf_dist_matrix *m);
    /* The lower Cholesky factor in place of the lower triangle, and the reciprocal condition
     * number of the matrix in the 1-norm estimated from it (as LAPACK's dpocon). 0, or the
     * factorisation's or the estimate's nonzero info. */
    int (*cholesky)(void *ctx, atf_dist_matrix *m, double *rcond);
    /* The eigenvalues into w[M] (ascending, on every process) and the eigenvectors in place of
     * the matrix, whose lower triangle is given. 0, or nonzero (no memory, or no convergence). */
    int (*eigen)(void *ctx, atf_dist_matrix *m, double *w);
    /* x = G⁻¹ b after cholesky (winv NULL), or x = V diag(winv) Vᵀ b after eigen: b and x are
     * M-vectors, whole on every process, x with the same bits on every process. */
    void (*solve)(void *ctx, const atf_dist_matrix *m, const double *winv, const double *b,
                  double *x);
    void (*close)(void *ctx, atf_dist_matrix *m);
    /* Rows of `width` doubles from every process to every process (MPI_Alltoallv; counts and
     * displacements in rows): scount[q] rows from send + sdispl[q]·width to process q, and
     * rcount[q] rows from process q into recv + rdispl[q]·width. */
    void (*exchange)(void *ctx, int width, const double *send, const int *scount,
                     const int *sdispl, double *recv, const int *rcount, const int *rdispl);
    void *ctx;
} atf_dist_gram;

/* Processes that share the examples of one problem or one minibatch (`mpirun -np K atf solve`,
 * `atf train`; the command implements this with MPI, the library knows nothing of it). Each process holds a shard of
 * the problem (atf_problem_read_shard with atf_shard_range(N, rank, size)) and makes the same
 * calls in the same order; both functions are collective. docs/solver.md, "Several processes". */
typedef struct {
    int rank, size;
    /* pairs[2n]: n double-double values (hi, lo, hi, lo, …) replaced by their sum over the
     * processes (atf_dd_add_dd), the same bits on every process. */
    void (*sum_dd)(void *ctx, double *pairs, int64_t n);
    /* x holds N examples' rows of `width` values; each process has filled those of its own
     * examples (atf_shard_share); afterwards every process holds all of them. */
    void (*gather)(void *ctx, double *x, int N, int width);
    /* x[n] replaced by the elementwise maximum over the processes. */
    void (*max)(void *ctx, double *x, int64_t n);
    void *ctx;
    /* The distributed Gram of method admm (interpolation); NULL: the Gram methods are refused
     * over several processes. */
    const atf_dist_gram *gram;
    /* How many of the processes share this process's machine (its memory): method auto's
     * estimate of whether their shares of the Gram fit. 0 is taken as size (one machine). */
    int local;
} atf_processes;

/* Read a process's shard of a problem file: everything atf_problem_read reads and checks,
 * except that each factored block's H and D hold only the rows of examples first …
 * first + count − 1 (read as HDF5 hyperslabs: the whole H and D are never in memory) and the
 * test split is not read. Dense and sparse blocks are refused (ATF_E_INPUT, naming the block).
 * check = 0 skips the separate checking program (atf-h5check): for the processes of a job one
 * of which has already checked the same file. fingerprint = 0 leaves out->fingerprint "" (the
 * fingerprint needs the whole content, which is then streamed through in slices) and
 * fingerprint_state ATF_FINGERPRINT_ABSENT (nothing compared); fingerprint = 1 gives exactly
 * what atf_problem_read gives for the file. The blocks have N = count, M = count·C (their own
 * rows); ATF_E_USAGE, naming the file and the sizes, for first < 0, count < 1 or
 * first + count > N. */
atf_error atf_problem_read_shard(const char *path, int first, int count, int check,
                                 int fingerprint, atf_problem **out, char *err);

/* A process's shard of a problem file's test split (/test), for a job that scores over
 * processes (`mpirun -np K atf path`): a problem of the test split's N examples — its r, y, f0
 * and labels of all N — whose factored blocks hold the rows of examples first …
 * first + count − 1 only (shard_first, shard_count; the blocks have N = count), with the
 * training blocks' names, indices, penalties and structures; no test split, no provenance,
 * fingerprint "" (ATF_FINGERPRINT_ABSENT). *out = NULL (ATF_OK) when the file has no test split.
 * check, dense and sparse blocks and bad ranges (beyond the test split: ATF_E_USAGE naming its
 * samples) as atf_problem_read_shard. */
atf_error atf_problem_read_test_shard(const char *path, int first, int count, int check,
                                      atf_problem **out, char *err);

/* The problem of the examples idx[0 … n−1] of the problem file `source` (in that order) with
 * the file's test split whole, written to `path` atomically as atf_problem_write writes the
 * problem atf_problem_select_examples gives (with a copy of the test split): the same items,
 * values and fingerprint — but every factored block's rows are read from `source` and written
 * slice by slice (HDF5 hyperslabs), so that no whole H or D is ever in memory, neither the
 * source's nor the copy's (problems/problem_copy.c; `atf path --validation-fraction` over
 * processes writes its fitted problem so). `head` is `source` as read, whole or a shard
 * (atf_problem_read_shard): its N, C, r, y, f0 and labels (of every example), provenance and
 * its blocks' names, indices, shapes, penalties and structures are what the copy gets (a
 * penalty set on head is the one written); the rows it holds are not used. The source is not
 * checked again (atf-h5check): read head from it first. path NULL writes nothing and only
 * computes the fingerprint. fingerprint (may be NULL) receives the copy's,
 * ATF_FINGERPRINT_LEN bytes ("" on failure). ATF_E_USAGE for idx out of range or n < 1,
 * ATF_E_INPUT for a dense or sparse block or a row of the source that is not finite (named as
 * the source's readers name it), ATF_E_IO for a failed write (nothing is left at path). */
atf_error atf_problem_copy_examples(const atf_problem *head, const char *source, const int *idx,
                                    int n, const char *path, char *fingerprint, char *err);

/* Total number of variables Σ rows·cols. */
int64_t atf_problem_nvars(const atf_problem *prob);

/* ---- constraint operators (docs/formats.md). Factored blocks are never materialised. ----
 * beta = 0 overwrites the output (which may then hold garbage or NaN). Factored blocks use
 * scratch space (N × cols doubles for apply and adjoint; N × N plus a 256 × M panel for the
 * Gram; dense blocks the panel, sparse ones a rows·cols vector); if it cannot be allocated the
 * output is filled with NaN, which callers' finiteness checks report. */

/* y[M] = beta·y + A_b vec(B), B rows × cols row-major. */
void atf_block_apply(const atf_block *b, const double *B, double beta, double *y);

/* B = beta·B + A_bᵀ λ (rows × cols row-major), λ [M]. For factored blocks one GEMM:
 * Σ_m λ_m h_i δ_mᵀ = Hᵀ Λ D with Λ the N × M spread of λ. */
void atf_block_adjoint(const atf_block *b, const double *lambda, double beta, double *B);

/* The same two with the caller's scratch of atf_block_work_size(b) doubles (NULL: allocated
 * per call as above). Solvers that apply A thousands of times keep one scratch: a fresh N × cols
 * buffer per call is tens of MB at full scale, mapped and zeroed by the kernel every time. */
int64_t atf_block_work_size(const atf_block *b);
void atf_block_apply_work(const atf_block *b, const double *B, double beta, double *y,
                          double *work);
void atf_block_adjoint_work(const atf_block *b, const double *lambda, double beta, double *B,
                            double *work);

/* A loss's curvature at one example of a problem: u = K_i y (C values; u may be y). */
typedef void atf_curvature_fn(void *ctx, int example, const double *y, double *u);

/* Hessian–vector products of a loss with per-example curvature K through factored blocks
 * b[0 … nb) of one problem (same N and C), for k vectors at once: y = Σ_l A_l X_l, u = K y and
 * G_l = A_lᵀ u, with each D read once (per example: y_i = Σ_l D_li t_li, u_i = K_i y_i,
 * s_li = D_liᵀ u_i while the example's rows of D are in cache — apply then adjoint read D twice,
 * and at full scale that traffic, not the GEMMs, is most of a product's time; with k vectors
 * once for all k, and the GEMMs with H are k times wider). X[l] and G[l] are rows_l × (k·cols_l)
 * row-major: the k vectors' matrices side by side. On return y [M·k] holds u, example i's k
 * vectors (C values each) together at y + i·k·C. work: atf_factored_hess_work_size doubles
 * (N·k·Σ_l cols_l, and twice the largest k·rows_l·cols_l for the sums over chunks). */
int64_t atf_factored_hess_work_size(int nb, const atf_block *const *b, int k);
void atf_factored_hess(int nb, const atf_block *const *b, int k, const double *const *X,
                       double *const *G, atf_curvature_fn *curv, void *ctx, double *y,
                       double *work);

/* G[M × M] = beta·G + A_b A_bᵀ. Factored: atf_factored_gram. */
void atf_block_gram(const atf_block *b, double beta, double *G);

/* The Gram of a factored operator given by its arrays (factored blocks, a network's Jacobian
 * blocks): G[M × M] = beta·G + (H Hᵀ expanded to rows) ∘ (D Dᵀ) for H [N × P], D [M × Q],
 * M = N·C, i.e. G[m][m'] += (h_i·h_i') (δ_m·δ_m') with i = m / C. Needs N × N plus a 256 × M
 * panel of scratch; without it G is filled with NaN and ATF_E_NOMEM is returned. */
atf_error atf_factored_gram(int N, int C, int P, int Q, const double *H, const double *D,
                            double beta, double *G);

/* A block of the examples idx[0 … n−1] (in that order; each example's C rows together) of b:
 * the same operator restricted to those examples, with N = n and its own copies of the rows
 * (H and D rows, dense rows, or CSR rows), owned by out (release with atf_block_free_arrays).
 * ATF_E_INPUT for an index outside 0 … N−1 or n < 1, ATF_E_NOMEM. */
atf_error atf_block_select_examples(const atf_block *b, const int *idx, int n, atf_block *out);
/* Free the arrays a block owns (J, indptr, indices, data, H, D) and set them to NULL. */
void atf_block_free_arrays(atf_block *b);

/* Materialise A_b densely as [M × rows·cols] (tests and small problems only). Caller frees. */
double *atf_block_dense(const atf_block *b);

/* Sum over blocks: y = A vec(B_1..B_L) − r (residual), with Bs[l] the l-th block. Needs the
 * whole problem: not for a shard (its blocks hold shard_count·C of the M rows of r). */
void atf_problem_residual(const atf_problem *prob, double *const *Bs, double *res);

#ifdef __cplusplus
}
#endif

#endif
