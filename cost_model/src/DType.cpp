//===- DType.cpp - Element types the cost model prices --------------------===//

#include "cleave/cost_model/DType.h"
#include "Strings.h"

namespace cleave::cost {

int dtypeBytes(DType type) {
  switch (type) {
  case DType::Fp32:
  case DType::Tf32:
    return 4;
  case DType::Bf16:
  case DType::Fp16:
    return 2;
  case DType::Fp8:
    return 1;
  }
  return 4;
}

std::string_view dtypeName(DType type) {
  switch (type) {
  case DType::Fp32:
    return "fp32";
  case DType::Tf32:
    return "tf32";
  case DType::Bf16:
    return "bf16";
  case DType::Fp16:
    return "fp16";
  case DType::Fp8:
    return "fp8";
  }
  return "fp32";
}

absl::StatusOr<DType> parseDType(std::string_view name) {
  for (DType type : kAllDTypes)
    if (dtypeName(type) == name)
      return type;
  return absl::InvalidArgumentError(cat(
      "unknown dtype '", name, "' (known: fp32, tf32, bf16, ", "fp16, fp8)"));
}

} // namespace cleave::cost
