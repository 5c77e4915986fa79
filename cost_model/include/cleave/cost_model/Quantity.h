//===- Quantity.h - Numbers with units in text files ------------*- C++ -*-===//
//
// Values in cluster and profile files may carry a unit so that they can be
// copied from a datasheet: "312 TFLOP/s", "80 GB", "200 Gb/s", "0.6 us",
// "85%". A bare number is in SI base units. Decimal prefixes are powers of
// 1000 and binary ones (KiB, MiB, ...) powers of 1024; a lowercase "b" in a
// rate means bits ("Gb/s"), an uppercase "B" bytes ("GB/s").
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_QUANTITY_H
#define CLEAVE_COST_MODEL_QUANTITY_H

#include "absl/status/statusor.h"

#include <string>
#include <string_view>

namespace cleave::cost {

enum class Quantity {
  Count,    ///< a whole number, no unit
  Number,   ///< a plain number, no unit
  Fraction, ///< a number or a percentage
  Seconds,  ///< s, ms, us, ns
  Bytes,    ///< B, KB, MB, GB, TB, KiB, MiB, GiB, TiB
  ByteRate, ///< B/s ... TB/s, and bit rates Mb/s, Gb/s, Tb/s
  FlopRate, ///< FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s
};

/// Parses `text` as `quantity`; the error says what was expected.
absl::StatusOr<double> parseQuantity(std::string_view text, Quantity quantity);

/// Writes `value` with the unit a person would use for it.
std::string formatQuantity(double value, Quantity quantity);

/// An example of the accepted form, for error messages and docs.
std::string_view quantityExample(Quantity quantity);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_QUANTITY_H
