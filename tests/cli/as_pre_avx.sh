#!/bin/sh
# The numeric tests as a machine without AVX runs them (Intel Nehalem and Westmere, the last
# x86-64 CPUs before AVX): scalelab's portable C loops and OpenBLAS's Nehalem (SSE4.2) kernels
# (tests/as_cpu.sh).
CPU_PATH=portable CPU_CORE=Nehalem
. "$srcdir/tests/as_cpu.sh"
