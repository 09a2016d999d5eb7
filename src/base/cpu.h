/* What this CPU and its operating system can run: the vector extensions the numeric kernels
 * choose between (num/fp.c's conversions, num/exp.c's exponentials, the loops compiled once
 * per path with CPU_CLONES: AdamW, the collectives' data, the model's element-wise passes).
 *
 * Read with cpuid and xgetbv directly (clang 14's __builtin_cpu_supports does not know
 * "f16c"), once per process: cpuid is slow where it traps (a virtual machine sends it to the
 * hypervisor), so asking on every call would cost more than the kernels save. An extension
 * counts only if the OS also saves its registers (YMM for AVX2, F16C and FMA; the opmask and
 * ZMM state for AVX-512). Elsewhere than x86-64, none.
 *
 * SCALELAB_CPU=avx2 or SCALELAB_CPU=portable in the environment caps what is used (read once,
 * at the first question): an AVX-512 machine then runs the AVX2 code or the plain C loops, to
 * time or test each path on one host. Every path gives the same bits (the kernels neither
 * reassociate nor contract), so only the speed changes. */
#ifndef SCALELAB_BASE_CPU_H
#define SCALELAB_BASE_CPU_H

enum cpu_feature {
    CPU_AVX2 = 1 << 0,
    CPU_F16C = 1 << 1,
    CPU_FMA = 1 << 2,
    CPU_AVX512F = 1 << 3,
    CPU_AVX512DQ = 1 << 4,
    CPU_AVX512BW = 1 << 5,
    CPU_AVX512VL = 1 << 6,
};

/* The features of enum cpu_feature this machine has, or-ed (less SCALELAB_CPU's cap). */
unsigned cpu_features(void);

/* Whether it has every one of `want`. */
static inline int cpu_has(unsigned want)
{
    return (cpu_features() & want) == want;
}

/* The code CPU_CLONES runs: AVX-512 (F, DQ, BW, VL with AVX2, FMA and F16C), AVX2 (with FMA
 * and F16C), or the portable C build (SSE2 on x86-64). */
enum cpu_path { CPU_PATH_PORTABLE, CPU_PATH_AVX2, CPU_PATH_AVX512 };
enum cpu_path cpu_path(void);
const char *cpu_path_name(enum cpu_path p); /* "portable C", "AVX2", "AVX-512" */

/* CPU_CLONES(name, (params), (args)) defines `static void name(params)` running the body
 * `static inline CPU_INLINE void name##_body(params)`, compiled three times: for AVX-512, for
 * AVX2 and portably; each call takes the widest this machine runs (cpu_path). The body is
 * plain C whose loops the compiler vectorizes for each target (KERNEL_CFLAGS: no contraction,
 * no reassociation, so every build gives the same bits). */
#define CPU_INLINE __attribute__((always_inline))
#if defined(__x86_64__) && defined(__GNUC__)
#define CPU_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define CPU_TARGET_AVX512                                                                          \
    __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,f16c")))
#define CPU_CLONES(name, params, args)                                                             \
    static void name##_portable params                                                             \
    {                                                                                              \
        name##_body args;                                                                          \
    }                                                                                              \
    CPU_TARGET_AVX2 static void name##_avx2 params                                                 \
    {                                                                                              \
        name##_body args;                                                                          \
    }                                                                                              \
    CPU_TARGET_AVX512 static void name##_avx512 params                                             \
    {                                                                                              \
        name##_body args;                                                                          \
    }                                                                                              \
    static void name params                                                                        \
    {                                                                                              \
        switch (cpu_path()) {                                                                      \
        case CPU_PATH_AVX512: name##_avx512 args; return;                                          \
        case CPU_PATH_AVX2: name##_avx2 args; return;                                              \
        default: name##_portable args; return;                                                     \
        }                                                                                          \
    }
#else
#define CPU_CLONES(name, params, args)                                                             \
    static void name params                                                                        \
    {                                                                                              \
        name##_body args;                                                                          \
    }
#endif

#endif
