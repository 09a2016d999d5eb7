/* What this CPU and its OS can run, asked once (base/cpu.h). */
#include "config.h"
#include "base/cpu.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>

static unsigned ask(void)
{
    unsigned a, b, c, d, f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    bool avx = c >> 28 & 1, osxsave = c >> 27 & 1;
    if (!avx || !osxsave)
        return 0;
    unsigned xcr0_lo, xcr0_hi;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 6) != 6) /* XMM and YMM state */
        return 0;
    f |= (c >> 29 & 1 ? CPU_F16C : 0) | (c >> 12 & 1 ? CPU_FMA : 0);
    if (__get_cpuid_max(0, NULL) < 7)
        return f;
    __cpuid_count(7, 0, a, b, c, d);
    f |= b >> 5 & 1 ? CPU_AVX2 : 0;
    if (b >> 16 & 1 && (xcr0_lo & 0xe0) == 0xe0) /* opmask, ZMM upper halves, ZMM16-31 */
        f |= CPU_AVX512F | (b >> 17 & 1 ? CPU_AVX512DQ : 0) | (b >> 30 & 1 ? CPU_AVX512BW : 0) |
             (b >> 31 & 1 ? CPU_AVX512VL : 0);
    return f;
}
#else
static unsigned ask(void)
{
    return 0;
}
#endif

/* SCALELAB_CPU's cap: what a path may use. */
static unsigned cap(void)
{
    const char *c = getenv("SCALELAB_CPU");
    if (c && !strcmp(c, "avx2"))
        return CPU_AVX2 | CPU_F16C | CPU_FMA;
    if (c && !strcmp(c, "portable"))
        return 0;
    return ~0u;
}

unsigned cpu_features(void)
{
    static atomic_int has = -1; /* -1: not yet asked */
    int h = atomic_load_explicit(&has, memory_order_relaxed);
    if (h < 0) {
        h = (int)(ask() & cap());
        atomic_store_explicit(&has, h, memory_order_relaxed);
    }
    return (unsigned)h;
}

enum cpu_path cpu_path(void)
{
    const unsigned avx2 = CPU_AVX2 | CPU_FMA | CPU_F16C;
    if (cpu_has(avx2 | CPU_AVX512F | CPU_AVX512DQ | CPU_AVX512BW | CPU_AVX512VL))
        return CPU_PATH_AVX512;
    return cpu_has(avx2) ? CPU_PATH_AVX2 : CPU_PATH_PORTABLE;
}

const char *cpu_path_name(enum cpu_path p)
{
    return p == CPU_PATH_AVX512 ? "AVX-512" : p == CPU_PATH_AVX2 ? "AVX2" : "portable C";
}
