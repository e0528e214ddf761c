/* checkpoint.c — what a solver's saved state belongs to: the keys of checkpoints and of kept
 * preconditioner factors, and the check that a state handed back is this solve's.
 *
 * A key names the method and its state's version, the problem by its content's fingerprint, the
 * loss, the tolerance and every setting that shapes the iterates, and every block's penalty; a
 * method resumes only a state whose key is its own (atf_sv_checkpoint_is_ours). The states
 * themselves are the methods' (admm.c, newton.c, alm.c, linsys/pcg.c): each keeps a header of
 * its own, checked on resume before any arithmetic. */
#include <stdio.h>
#include <string.h>

#include "solver_internal.h"

/* A checkpoint key names the problem's fingerprint after this tag. */
#define FINGERPRINT_TAG "; problem "

atf_error atf_sv_checkpoint_key(atf_solver *s, const char *state, const atf_loss *loss,
                                double eps, const atf_loss *bridge_to, char *key, char *err)
{
    char *fp = s->fingerprint, spec[ATF_LOSS_SPECLEN];
    if (!fp[0]) /* a problem built in code has none stored: hashed once per solve */
        snprintf(fp, ATF_FINGERPRINT_LEN, "%s", s->prob->fingerprint);
    if (!fp[0] && atf_problem_fingerprint(s->prob, fp) != ATF_OK) {
        fp[0] = '\0';
        atf_errorf(err, "%s: checkpoint: cannot fingerprint the problem", state);
        return ATF_E_USAGE;
    }
    atf_loss_format(loss, spec, sizeof spec);
    int k = snprintf(key, ATF_CHECKPOINT_KEYLEN,
                     "%s" FINGERPRINT_TAG "%s; loss %s; structure %s; reduce %d; newton_rank %d; "
                     "eps_rel %.17g; variables %zu; penalties", state, fp, spec,
                     atf_structure_name(s->set.structure), s->set.reduce, s->set.newton_rank,
                     eps, s->n);
    for (int b = 0; b < s->prob->nblocks && k < ATF_CHECKPOINT_KEYLEN; b++)
        k += snprintf(key + k, ATF_CHECKPOINT_KEYLEN - (size_t)k, " %s",
                      s->prob->blocks[b].penalty_spec);
    if (bridge_to && k < ATF_CHECKPOINT_KEYLEN) {
        atf_loss_format(bridge_to, spec, sizeof spec);
        k += snprintf(key + k, ATF_CHECKPOINT_KEYLEN - (size_t)k, "; on the way to %s", spec);
    }
    if (k >= ATF_CHECKPOINT_KEYLEN) {
        atf_errorf(err, "%s: checkpoint: the solve's description is longer than %d bytes "
                        "(too many blocks)", state, ATF_CHECKPOINT_KEYLEN - 1);
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

/* The fingerprint in a key ("" without the tag). */
static const char *key_fingerprint(const char *key)
{
    const char *at = strstr(key, FINGERPRINT_TAG);
    return at ? at + sizeof FINGERPRINT_TAG - 1 : "";
}

/* Whether two checkpoint keys differ only in the problem's fingerprint (the 32 hex digits after
 * the tag): the same solve of a problem whose numbers are not bit for bit the same. */
static int only_the_data_differ(const char *a, const char *b)
{
    const char *pa = strstr(a, FINGERPRINT_TAG), *pb = strstr(b, FINGERPRINT_TAG);
    if (!pa || !pb || pa - a != pb - b || strncmp(a, b, (size_t)(pa - a)) != 0)
        return 0;
    size_t fp = sizeof FINGERPRINT_TAG - 1 + ATF_FINGERPRINT_LEN - 1;
    return strlen(pa) >= fp && strlen(pb) >= fp && strcmp(pa + fp, pb + fp) == 0;
}

atf_error atf_sv_checkpoint_is_ours(const char *method, const atf_checkpoint *cp,
                                    const char *key, char *err)
{
    if (strcmp(cp->key, key) == 0)
        return ATF_OK;
    if (only_the_data_differ(cp->key, key)) {
        /* The common way to get here is rebuilding the problem on another machine: OpenBLAS
         * picks its kernels by CPU, and kernels round differently. Say so, since the rest of the
         * key is the same and "another solve's" would send the user looking in the wrong place. */
        atf_errorf(err, "%s: the checkpoint is for the same solve of a problem whose numbers "
                        "differ (problem fingerprint %.32s there, %.32s here): built again on "
                        "another machine or BLAS kernel? (OpenBLAS: OPENBLAS_CORETYPE)",
                   method, key_fingerprint(cp->key), key_fingerprint(key));
        return ATF_E_INPUT;
    }
    atf_errorf(err, "%s: the checkpoint is another solve's (it is for \"%.300s\"; this solve "
                    "is \"%.300s\")", method, cp->key, key);
    return ATF_E_INPUT;
}
