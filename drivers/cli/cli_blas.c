/* cli_blas.c — OpenBLAS's kernel on CPUs it does not know.
 *
 * OpenBLAS picks its kernels when the library is loaded, before main(), from the CPU's model
 * number, or from the environment variable OPENBLAS_CORETYPE when set. Debian 12's OpenBLAS
 * (0.3.21) does not know recent Intel server CPUs (seen: family 6, model 207) and falls back
 * to its generic "Prescott" kernels: DGEMM at 13 GFLOPS where its SkylakeX kernels reach 35-50
 * on the same core (docs/record/solver.md §17, "The BLAS kernel"). So when the variable is unset,
 * the library reports a generic core and the CPU has AVX-512 (or AVX2 with FMA), the command sets
 * the matching core type and executes itself again, once (the variable is then set). A user's
 * own OPENBLAS_CORETYPE is always kept. Nothing is printed; if the re-execution fails the
 * command simply goes on with the kernel it has. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atf_cli.h"

/* The kernels OpenBLAS falls back to when it does not recognise the CPU. */
static int generic_core(const char *name)
{
    static const char *const generic[] = {"Prescott", "Core2", "Nehalem", "Katmai", "Coppermine",
                                          "Northwood", "Banias", "Atom", "Unknown"};
    for (size_t i = 0; name && i < sizeof generic / sizeof generic[0]; i++)
        if (!strcmp(name, generic[i]))
            return 1;
    return 0;
}

static const char *better_core(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
#endif
    return NULL;
}

void atf_cli_blas_kernel(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE") || !generic_core(openblas_get_corename()))
        return;
    const char *core = better_core();
    if (!core || setenv("OPENBLAS_CORETYPE", core, 1) != 0)
        return;
    execv("/proc/self/exe", argv); /* returns only on failure: go on as we are */
}
