//===- VectorClones.h - Kernels compiled once per x86-64 level --*- C++ -*-===//
//
// Internal to the kernel library.
//
// Debian builds for the x86-64 baseline, whose vectors are SSE2's four
// floats. The element-wise kernels' loops (GELU's branch-free exp, the
// normalisations, AdamW) run several times faster with AVX2 or AVX-512:
// GELU-tanh over 2M floats took 11.9 ms as SSE2, 6.1 ms as AVX2 and 1.5 ms
// as AVX-512 on this project's development machine (AMD EPYC). -march=native
// would tie the binaries, and any cache of their objects (ccache), to the
// machine that built them. Instead CLEAVE_VECTOR_CLONES has GCC compile the
// kernel it marks three times, for x86-64-v4 (AVX-512), x86-64-v3 (AVX2)
// and the baseline, and the dynamic loader picks the widest one the CPU runs
// (an ifunc resolved once per process): the PyTorch/ATen CPU_CAPABILITY
// idea, at the granularity of a function.
//
// The library is built with -ffp-contract=off, so no clone fuses a
// multiply and an add into an FMA the baseline does not: every clone
// rounds every operation as the source says, and the clones agree bit for
// bit (VectorClonesTest checks it).
//
// A helper a marked kernel calls runs in the clone's instruction set only
// where it is inlined; CLEAVE_CLONE_INLINE makes sure of that for the
// helpers holding the loops (g++ otherwise keeps some apart, as baseline
// code, and the clone calls it).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_VECTORCLONES_H
#define CLEAVE_RUNTIME_KERNELS_VECTORCLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&         \
    defined(__linux__) && !defined(CLEAVE_NO_VECTOR_CLONES)
#define CLEAVE_VECTOR_CLONES                                                   \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define CLEAVE_CLONE_INLINE inline __attribute__((always_inline))
#else
#define CLEAVE_VECTOR_CLONES
#define CLEAVE_CLONE_INLINE inline
#endif

#endif // CLEAVE_RUNTIME_KERNELS_VECTORCLONES_H
