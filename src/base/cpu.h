/* What this CPU and its operating system can run: the vector extensions the numeric kernels
 * choose between (num/fp.c's conversions, num/exp.c's exponentials).
 *
 * Read with cpuid and xgetbv directly (clang 14's __builtin_cpu_supports does not know
 * "f16c"), once per process: cpuid is slow where it traps (a virtual machine sends it to the
 * hypervisor), so asking on every call would cost more than the kernels save. An extension
 * counts only if the OS also saves its registers (YMM for AVX2, F16C and FMA; the opmask and
 * ZMM state for AVX-512). Elsewhere than x86-64, none. */
#ifndef SCALELAB_BASE_CPU_H
#define SCALELAB_BASE_CPU_H

enum cpu_feature {
    CPU_AVX2 = 1 << 0,
    CPU_F16C = 1 << 1,
    CPU_FMA = 1 << 2,
    CPU_AVX512F = 1 << 3,
};

/* The features of enum cpu_feature this machine has, or-ed. */
unsigned cpu_features(void);

/* Whether it has every one of `want`. */
static inline int cpu_has(unsigned want)
{
    return (cpu_features() & want) == want;
}

#endif
