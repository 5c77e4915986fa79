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
/// `firstStep` numbers them. Fails naming the first loss step or
/// parameter whose relative error exceeds `tolerance`; `report` gets one
/// line per step and the parameters' largest error.
absl::Status compareRuns(const plan::Plan &plan, const std::string &planDir,
                         const plan::Plan &reference,
                         const std::string &referenceDir, double tolerance,
                         std::string *report, int64_t firstStep = 1);

} // namespace cleave::launcher

#endif // CLEAVE_RUNTIME_LAUNCHER_RUNDUMPS_H
