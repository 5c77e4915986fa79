//===- PlanIO.h - Read and write plan artifacts -----------------*- C++ -*-===//
//
// A plan file is a small header followed by the serialized cleave.plan.Plan
// message (runtime/plan/plan.proto):
//
//   bytes 0-7    magic "CLEAVEPL"
//   bytes 8-11   format version, little-endian uint32
//   bytes 12-19  payload length, little-endian uint64
//   bytes 20-27  FNV-1a 64 hash of the payload, little-endian
//   bytes 28-    the payload
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
inline constexpr uint32_t kFormatVersion = 7;

/// Serializes `plan` (its format_version is set to kFormatVersion) with the
/// header above.
std::string serializePlan(const Plan &plan);
absl::StatusOr<Plan> parsePlan(const std::string &bytes);

/// File variants; errors name the path.
absl::Status writePlanFile(const std::string &path, const Plan &plan);
absl::StatusOr<Plan> readPlanFile(const std::string &path);

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
