//===- ReductionOps.cpp - reduce_sum, reduce_mean, reduce_max on the GPU --===//
//
// A reduction over arbitrary axes becomes passes of one kernel shape
// (kernels/Reduction.h): merge the input's dimensions into alternating
// runs of kept and reduced ones, then reduce the innermost reduced run as
// the middle of [outer, length, inner], which leaves the other runs in
// place, until none is left. The usual cases take one pass: the last axes
// (rows), the leading axes (columns: a bias gradient), all axes (a loss
// mean). Attributes and checks are the CPU glue's (ComputeKernels.cpp,
// GradKernels.cpp); axes must be in [0, rank), as kernels::reduceShape
// checks.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Ops.h"
#include "OpChecks.h"
#include "kernels/Reduction.h"

#include "cleave/runtime/kernels/Reduction.h"
#include "cleave/runtime/kernels/Tensor.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cleave::cuda {

namespace k = cleave::kernels;
using executor::OpContext;

namespace {

cudaStream_t stream() { return context().compute; }

int smCount() { return context().properties.multiProcessorCount; }

/// A run of neighbouring input dimensions, all kept or all reduced.
struct Run {
  int64_t size;
  bool reduced;
};

/// Drops size-1 runs (they move nothing) and merges neighbours of the same
/// kind.
std::vector<Run> merged(const std::vector<Run> &runs) {
  std::vector<Run> out;
  for (const Run &r : runs) {
    if (r.size == 1)
      continue;
    if (!out.empty() && out.back().reduced == r.reduced)
      out.back().size *= r.size;
    else
      out.push_back(r);
  }
  return out;
}

/// The input's runs; `axes` were validated by kernels::reduceShape.
std::vector<Run> inputRuns(const k::Shape &shape,
                           const std::vector<int64_t> &axes) {
  std::vector<Run> runs;
  for (int64_t d : shape)
    runs.push_back({d, false});
  for (int64_t axis : axes)
    runs[axis].reduced = true;
  return merged(runs);
}

int64_t product(const std::vector<Run> &runs, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    p *= runs[i].size;
  return p;
}

bool anyReduced(const std::vector<Run> &runs) {
  return std::any_of(runs.begin(), runs.end(),
                     [](const Run &r) { return r.reduced; });
}

/// One [outer, length, inner] pass into `out` (with its split workspace).
void pass(ReduceCombine op, const float *in, float *out, int64_t outer,
          int64_t length, int64_t inner, float scale) {
  int sms = smCount();
  Scratch workspace(reduceMiddleWorkspace(outer, length, inner, sms) *
                    sizeof(float));
  reduceMiddle(op, in, out, outer, length, inner, scale, workspace.as<float>(),
               sms, stream());
}

/// Reduces `in` of `shape` over `axes` into the `outN` elements of `out`:
/// the CPU's kernels::reduce, including its empty cases (a sum of nothing
/// is 0, a mean NaN, a max -inf).
void reduceInto(k::ReduceOp op, const float *in, const k::Shape &shape,
                const std::vector<int64_t> &axes, float *out, int64_t outN) {
  int64_t inN = k::numElements(shape);
  if (outN == 0)
    return;
  if (inN == 0) {
    float value = op == k::ReduceOp::Sum ? 0.0f
                  : op == k::ReduceOp::Mean
                      ? std::numeric_limits<float>::quiet_NaN()
                      : -std::numeric_limits<float>::infinity();
    reductionFill(out, outN, value, stream());
    return;
  }
  ReduceCombine combine =
      op == k::ReduceOp::Max ? ReduceCombine::Max : ReduceCombine::Sum;
  // As the CPU: the sum times 1/count, not divided by count.
  float scale =
      op == k::ReduceOp::Mean ? 1.0f / static_cast<float>(inN / outN) : 1.0f;

  std::vector<Run> runs = inputRuns(shape, axes);
  if (!anyReduced(runs)) {
    // Only unit axes: each result is one element, combined with the
    // identity as on the CPU (a sum turns -0 into 0).
    pass(combine, in, out, inN, 1, 1, scale);
    return;
  }
  const float *src = in;
  // The previous pass's result, freed (in stream order) once the next pass
  // that reads it is enqueued.
  std::unique_ptr<Scratch> held;
  while (true) {
    // The innermost reduced run.
    size_t g = runs.size() - 1;
    while (!runs[g].reduced)
      --g;
    int64_t outer = product(runs, 0, g), length = runs[g].size,
            inner = product(runs, g + 1, runs.size());
    runs.erase(runs.begin() + g);
    runs = merged(runs);
    if (!anyReduced(runs)) {
      pass(combine, src, out, outer, length, inner, scale);
      return;
    }
    auto next = std::make_unique<Scratch>(outer * inner * sizeof(float));
    pass(combine, src, next->as<float>(), outer, length, inner, 1.0f);
    held = std::move(next);
    src = held->as<float>();
  }
}

template <k::ReduceOp Op> void reduceKernel(OpContext &c) {
  c.expectArity(1, 1);
  k::ConstTensorRef in = c.in(0);
  k::TensorRef out = c.out(0);
  std::vector<int64_t> axes = c.attrInts("axes");
  requireShape(out.shape,
               k::reduceShape(in.shape, axes, c.attrBool("keepdims")),
               "result");
  reduceInto(Op, in.data, in.shape, axes, out.data, out.numElements());
}

/// Maps each input element to its group (its index in the result).
ReductionGroups groupMap(const k::Shape &shape,
                         const std::vector<int64_t> &axes) {
  std::vector<Run> runs = inputRuns(shape, axes);
  if (runs.empty())
    runs.push_back({1, false});
  if (runs.size() > static_cast<size_t>(kReductionMaxRank))
    throw std::invalid_argument(
        "reducing " + k::shapeString(shape) + " over these axes needs " +
        std::to_string(runs.size()) + " dimensions; the CUDA kernel takes " +
        std::to_string(kReductionMaxRank));
  ReductionGroups groups;
  groups.rank = static_cast<int>(runs.size());
  int64_t stride = 1;
  for (size_t d = runs.size(); d-- > 0;) {
    groups.dims[d] = runs[d].size;
    groups.groupStrides[d] = runs[d].reduced ? 0 : stride;
    if (!runs[d].reduced)
      stride *= runs[d].size;
  }
  return groups;
}

/// Operands: the input, the gradient of the result. The gradient goes to
/// the first maximum of each group in row-major order (the CPU's rule).
void reduceMaxGradKernel(OpContext &c) {
  c.expectArity(2, 1);
  k::ConstTensorRef in = c.in(0), dOut = c.in(1);
  k::TensorRef dIn = c.out(0);
  std::vector<int64_t> axes = c.attrInts("axes");
  requireShape(dOut.shape,
               k::reduceShape(in.shape, axes, c.attrBool("keepdims")),
               "the output gradient");
  requireShape(dIn.shape, in.shape, "the input gradient");
  int64_t n = in.numElements(), numGroups = dOut.numElements();
  if (n == 0)
    return;
  ReductionGroups groups = groupMap(in.shape, axes);

  Scratch maxima(numGroups * sizeof(float));
  reduceInto(k::ReduceOp::Max, in.data, in.shape, axes, maxima.as<float>(),
             numGroups);
  Scratch first(numGroups * sizeof(unsigned long long));
  // All ones: no index yet.
  CLEAVE_CUDA_CHECK(cudaMemsetAsync(
      first.data(), 0xFF, numGroups * sizeof(unsigned long long), stream()));
  reduceMaxGradMark(in.data, maxima.as<float>(), groups, n, dIn.data,
                    first.as<unsigned long long>(), stream());
  reduceMaxGradScatter(first.as<unsigned long long>(), dOut.data, numGroups,
                       dIn.data, stream());
}

} // namespace

void registerReductionOps(Registry &r) {
  r["graph.reduce_sum"] = reduceKernel<k::ReduceOp::Sum>;
  r["graph.reduce_mean"] = reduceKernel<k::ReduceOp::Mean>;
  r["graph.reduce_max"] = reduceKernel<k::ReduceOp::Max>;
  r["graph.reduce_max_grad"] = reduceMaxGradKernel;
}

} // namespace cleave::cuda
