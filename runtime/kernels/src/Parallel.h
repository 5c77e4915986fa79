//===- Parallel.h - The kernels' loops over the rank's threads --*- C++ -*-===//
//
// One OpenMP pool a rank, shared with OpenBLAS's OpenMP build (the
// top-level CMakeLists.txt links it): a GEMM called inside a parallel loop
// runs on its caller's thread, one called outside uses the whole pool, and
// no second set of threads spins against the first.
//
// Results never depend on the number of threads: a loop whose iterations
// write disjoint outputs is split in contiguous static chunks, and a sum
// over rows (a norm's weight gradient) is taken in fixed blocks of rows
// whose partial sums are added in block order, whatever thread computed
// each block. So a run on 1 thread and on 8 agree to the bit, and so do
// `--check`'s reference and the ranks it checks.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_KERNELS_SRC_PARALLEL_H
#define CLEAVE_RUNTIME_KERNELS_SRC_PARALLEL_H

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <vector>

namespace cleave::kernels::detail {

/// Work (about one multiply-add each) below which a loop stays on the
/// calling thread: waking the pool costs a few microseconds.
constexpr int64_t kMinParallelWork = 1 << 15;

/// f(begin, end) over [0, n) in contiguous chunks, one a thread; `work`
/// is the loop's total work (elements touched) deciding whether threads
/// pay. Nested calls (inside another parallel loop) run serially.
template <typename F>
void parallelFor(int64_t n, int64_t work, F &&f) {
  int threads = omp_in_parallel() || work < kMinParallelWork
                    ? 1
                    : static_cast<int>(std::min<int64_t>(
                          n, omp_get_max_threads()));
  if (threads <= 1) {
    if (n > 0)
      f(int64_t(0), n);
    return;
  }
  // A kernel's error (std::invalid_argument: a label out of range) may not
  // leave an OpenMP region: the first is kept and rethrown after it.
  std::exception_ptr error;
#pragma omp parallel num_threads(threads)
  {
    int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
    int64_t begin = n * t / count, end = n * (t + 1) / count;
    try {
      if (begin < end)
        f(begin, end);
    } catch (...) {
#pragma omp critical(cleave_kernel_error)
      if (!error)
        error = std::current_exception();
    }
  }
  if (error)
    std::rethrow_exception(error);
}

/// Rows per block of a row-sum: the partial sums of each block are added
/// in block order, so the sum is the same on any number of threads.
constexpr int64_t kSumBlockRows = 32;

/// `sums[0..width)` += the sum over rows of their terms: `blockTerms(r0,
/// r1, partial)` adds rows [r0, r1)'s terms into `partial` (width floats,
/// zeroed per block; null when `sums` is) and may write those rows' own
/// outputs too. Blocks of kSumBlockRows rows run in parallel.
///
/// The per-block function is where the arithmetic is: give it
/// CLEAVE_VECTOR_CLONES (a lambda or an OpenMP region is compiled for the
/// baseline architecture only, the call through the clone's resolver is
/// not). Check everything before: such a function must not throw, since
/// g++ 12 compiles a call to a target_clones function of the same file as
/// one that cannot (an exception through it ends in std::terminate).
template <typename F>
void parallelRowSums(int64_t rows, int64_t width, float *sums,
                     F &&blockTerms) {
  int64_t blocks = (rows + kSumBlockRows - 1) / kSumBlockRows;
  std::vector<float> partials(sums ? blocks * width : 0);
  parallelFor(blocks, rows * width, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      float *partial = sums ? partials.data() + b * width : nullptr;
      if (partial)
        std::fill(partial, partial + width, 0.0f);
      blockTerms(b * kSumBlockRows, std::min(rows, (b + 1) * kSumBlockRows),
                 partial);
    }
  });
  if (!sums)
    return;
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t i = 0; i < width; ++i)
      sums[i] += partials[b * width + i];
}

} // namespace cleave::kernels::detail

#endif // CLEAVE_RUNTIME_KERNELS_SRC_PARALLEL_H
