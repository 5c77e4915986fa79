//===- RunDumps.h - What a run's ranks dump, and comparing two runs -*- C++ -*-===//
//
// `cleave-worker --dump-params DIR` writes each rank's block of every
// parameter and rank 0 the step losses; `--dump-outputs DIR` each rank's
// rows of an inference plan's outputs. This is the one place that names
// those files (the worker writes through it) and reads them back: whole
// parameters and outputs assembled from every rank's blocks, and the
// comparison of a partitioned run with its one-rank reference behind
// `cleave run --check`. Plain C++ on the plan artifact; no MLIR, no MPI.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_LAUNCHER_RUNDUMPS_H
#define CLEAVE_RUNTIME_LAUNCHER_RUNDUMPS_H

#include "cleave/runtime/plan/plan.pb.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::launcher {

/// DIR/NAME.rankR.bin: rank R's block of parameter NAME (fp32 values;
/// '/', '\' and ' ' in the name become '_').
std::string parameterDumpPath(const std::string &dir, const std::string &name,
                              int rank);
/// DIR/NAME.grad.rankR.bin: rank R's block of parameter NAME's gradient
/// of every step, one block after another, reduced over the replicas,
/// before the update (dumped where a rank holds it whole: plans without
/// ZeRO).
std::string gradientDumpPath(const std::string &dir, const std::string &name,
                             int rank);
/// DIR/loss.txt: the step losses, one per line.
std::string lossDumpPath(const std::string &dir);
/// DIR/output<I>.mb<M>.rank<R>.bin: rank R's rows of output I for
/// microbatch M.
std::string outputDumpPath(const std::string &dir, int output,
                           int64_t microbatch, int rank);

/// A raw little-endian fp32 file (a dumped block, an expected output).
absl::StatusOr<std::vector<float>> readFloats(const std::string &path);

/// Output `index` of an inference plan for the whole global batch,
/// assembled from the files `cleave-worker --dump-outputs DIR` wrote (each
/// rank's rows of each microbatch; tensor-parallel replicas must agree).
absl::StatusOr<std::vector<float>> assembleOutput(const plan::Plan &plan,
                                                  int index,
                                                  const std::string &dir);

/// The comparison behind --check, on two --dump-params directories:
/// `plan`'s ranks' blocks are assembled into whole parameters (replicas
/// must agree exactly) and compared with the one-rank `reference` run.
/// The losses compared are the plan run's against the reference's last as
/// many (a resumed run covers the last steps of the reference's);
/// `firstStep` numbers them. Fails naming the first loss step, gradient
/// or parameter whose error exceeds `tolerance`; `report` gets one line
/// per step, the gradients' and the parameters' largest errors and the
/// rule used.
///
/// Under AdamW every step's gradients are compared where both runs
/// dumped them (max |a - b| over the model's largest gradient G, within
/// kAdamGradientFactor x tolerance: the parameters part by the allowance
/// below from the first update on, and later gradients see it), and a
/// parameter element whose reference gradient of a step is g may differ
/// by up to lr min(2, dg / |g|), dg = that gradient tolerance x G, more
/// for that step (summed over the steps) than the relative error allows:
/// Adam
/// divides each gradient by its own magnitude, so a gradient difference
/// dg (within the gradient check's tolerance G) becomes an update
/// difference of up to lr dg / |g|, and a gradient that is rounding noise
/// (zero in exact arithmetic, like an attention key bias's) moves about lr
/// a step either way. Elements with large gradients get next to nothing.
absl::Status compareRuns(const plan::Plan &plan, const std::string &planDir,
                         const plan::Plan &reference,
                         const std::string &referenceDir, double tolerance,
                         std::string *report, int64_t firstStep = 1);

/// See compareRuns.
inline constexpr double kAdamGradientFactor = 10;

} // namespace cleave::launcher

#endif // CLEAVE_RUNTIME_LAUNCHER_RUNDUMPS_H
