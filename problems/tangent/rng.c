/* rng.c — xoshiro256** (Blackman & Vigna) seeded by splitmix64, and a platform-independent
 * normal sampler.
 *
 * Reproducibility across machines is the point: integer arithmetic is exact, and the polar
 * method needs only +, −, ×, ÷, sqrt (all correctly rounded by IEEE 754) and a logarithm,
 * which is computed here from those operations instead of calling libm (whose log may differ
 * in the last bit between implementations). */
#include <float.h>
#include <math.h>

#include "atf_data.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void atf_rng_seed(atf_rng *rng, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&x);
    rng->has_spare = 0;
    rng->spare = 0.0;
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t atf_rng_u64(atf_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double atf_rng_uniform(atf_rng *rng)
{
    return (double)(atf_rng_u64(rng) >> 11) * 0x1.0p-53;
}

uint64_t atf_rng_below(atf_rng *rng, uint64_t n)
{
    /* Reject the top partial copy of [0, n) so every residue is equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = atf_rng_u64(rng);
    while (x >= limit);
    return x % n;
}

void atf_rng_shuffle(atf_rng *rng, int n, int *a)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)atf_rng_below(rng, (uint64_t)i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ln x for finite x > 0 from basic operations: x = m·2^e with m in [√½, √2), then
 * ln m = 2 atanh(s), s = (m−1)/(m+1), |s| < 0.1716, by its series (terms fall by s² < 0.0295,
 * so 12 terms reach 1e-18 relative), plus e·ln 2 split into an exact high part and a low part. */
static double portable_log(double x)
{
    int e;
    double m = frexp(x, &e); /* exact: m in [0.5, 1) */
    if (m < 0.70710678118654752440) {
        m *= 2.0;
        e -= 1;
    }
    double s = (m - 1.0) / (m + 1.0);
    double s2 = s * s;
    double sum = 0.0;
    for (int k = 23; k >= 1; k -= 2)
        sum = sum * s2 + 1.0 / (double)k;
    const double ln2_hi = 6.93147180369123816490e-01; /* exact in 32 bits */
    const double ln2_lo = 1.90821492927058770002e-10;
    return (double)e * ln2_hi + ((double)e * ln2_lo + 2.0 * s * sum);
}

double atf_rng_normal(atf_rng *rng)
{
    if (rng->has_spare) {
        rng->has_spare = 0;
        return rng->spare;
    }
    double u, v, q;
    do {
        u = 2.0 * atf_rng_uniform(rng) - 1.0;
        v = 2.0 * atf_rng_uniform(rng) - 1.0;
        q = u * u + v * v;
    } while (q >= 1.0 || q == 0.0);
    double f = sqrt(-2.0 * portable_log(q) / q);
    rng->spare = v * f;
    rng->has_spare = 1;
    return u * f;
}
