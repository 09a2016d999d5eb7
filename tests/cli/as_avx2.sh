#!/bin/sh
# The numeric tests as an AVX2 machine without AVX-512 runs them (Intel Haswell to Alder Lake,
# AMD Zen 1-3): scalelab's AVX2 kernels and OpenBLAS's Haswell ones (tests/as_cpu.sh).
CPU_PATH=avx2 CPU_CORE=Haswell
. "$srcdir/tests/as_cpu.sh"
