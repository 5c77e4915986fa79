//===- DType.h - Element types the cost model prices ------------*- C++ -*-===//
//
// The element types whose peak rates a device lists. tf32 is stored as fp32
// (4 bytes) but runs on tensor cores at its own rate.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_DTYPE_H
#define CLEAVE_COST_MODEL_DTYPE_H

#include "absl/status/statusor.h"

#include <array>
#include <string_view>

namespace cleave::cost {

enum class DType { Fp32, Tf32, Bf16, Fp16, Fp8 };

inline constexpr std::array<DType, 5> kAllDTypes = {
    DType::Fp32, DType::Tf32, DType::Bf16, DType::Fp16, DType::Fp8};

/// Bytes one element occupies in memory.
int dtypeBytes(DType type);

/// "fp32", "tf32", "bf16", "fp16", "fp8".
std::string_view dtypeName(DType type);

absl::StatusOr<DType> parseDType(std::string_view name);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_DTYPE_H
