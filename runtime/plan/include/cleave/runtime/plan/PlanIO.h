//===- PlanIO.h - Read and write plan artifacts -----------------*- C++ -*-===//
//
// A plan file is a small header, the serialized cleave.plan.Plan message
// (runtime/plan/plan.proto) without the weights, then the weight section:
//
//   bytes 0-7    magic "CLEAVEPL"
//   bytes 8-11   format version, little-endian uint32
//   bytes 12-19  payload length P, little-endian uint64
//   bytes 20-27  FNV-1a 64 hash of the payload, little-endian
//   bytes 28-35  weight section length W, little-endian uint64
//   bytes 36-43  XXH3-64 of the weight section, little-endian
//   bytes 44-    the payload (P bytes), then the weight section (W bytes)
//
// The weight section holds every parameter's initial_value at the offset
// its `initial_value_at` names (64-byte aligned, zero padding between), so
// the protobuf payload stays small whatever the model weighs (a message
// over 2 GiB cannot be parsed) and the weights are written straight from
// memory and read straight into it, never copied through a serialized
// message. In memory a Plan holds its weights in `initial_value` and no
// `initial_value_at`.
//
// The header lets a reader tell a file that is not a plan, a plan of another
// version, a truncated file and a corrupted one apart, each with its own
// message, before protobuf parses anything.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_PLAN_PLANIO_H
#define CLEAVE_RUNTIME_PLAN_PLANIO_H

#include "cleave/runtime/plan/plan.pb.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <cstdint>
#include <string>

namespace cleave::plan {

/// The version this build reads and writes (Plan.format_version).
inline constexpr uint32_t kFormatVersion = 8;

/// Bytes of the file header.
inline constexpr size_t kHeaderBytes = 44;

/// Whether the weights are read with the plan. Tools that only look at a
/// plan (inspect, the launcher) skip them; `hasInitialValue` still tells
/// which parameters have some.
enum class Weights { kLoad, kSkip };

/// The whole file in memory: the header, the payload (format_version set to
/// kFormatVersion) and the weight section. For tests and small plans;
/// writePlanFile streams the weights instead.
std::string serializePlan(const Plan &plan);
absl::StatusOr<Plan> parsePlan(const std::string &bytes,
                               Weights weights = Weights::kLoad);

/// File variants; errors name the path. The writer copies no weight: each
/// parameter's bytes go from memory to the file as they are.
absl::Status writePlanFile(const std::string &path, const Plan &plan);
absl::StatusOr<Plan> readPlanFile(const std::string &path,
                                  Weights weights = Weights::kLoad);

/// Whether `param` starts from given values: loaded (initial_value) or in
/// the file's weight section and skipped (initial_value_at).
bool hasInitialValue(const ParameterSharding &param);

/// Checks the references inside a plan: programs of ranks, segments of
/// schedule steps, tensor ids of instructions, parameter indices, mesh size
/// against the rank count, arena bounds. The first problem found is
/// returned, naming where it is ("program 1 (stage1), segment 'forward',
/// instruction 12 (graph.matmul): input 7 is not a tensor").
absl::Status validatePlan(const Plan &plan);

/// Bytes of one element of `dtype`.
int64_t dtypeBytes(DType dtype);

/// Whether `dtype` is one of the integer types (I8 ... U64; not BOOL).
bool isIntegerDType(DType dtype);

} // namespace cleave::plan

#endif // CLEAVE_RUNTIME_PLAN_PLANIO_H
