//===- Strings.h - Small string helpers over std::string_view ---*- C++ -*-===//
//
// Debian's Abseil is built with its own absl::string_view rather than
// std::string_view, so absl::StrCat and friends do not accept the
// std::string_view this library's API uses. These few helpers cover what
// the parsers need; Abseil is used for Status and StatusOr only.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_SRC_STRINGS_H
#define CLEAVE_COST_MODEL_SRC_STRINGS_H

#include "absl/status/status.h"

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace cleave::cost {

/// Concatenates anything an ostream prints (numbers as %g would).
template <typename... Args> std::string cat(const Args &...args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

std::string_view strip(std::string_view text);

/// Splits on every `separator`; empty pieces are kept.
std::vector<std::string_view> split(std::string_view text, char separator);

/// Splits on runs of spaces and tabs; no empty pieces.
std::vector<std::string_view> splitWords(std::string_view text);

template <typename Range>
std::string join(const Range &items, std::string_view separator) {
  std::string out;
  for (const auto &item : items) {
    if (!out.empty())
      out += separator;
    out += std::string_view(item);
  }
  return out;
}

/// A Status's message as a std::string.
inline std::string messageOf(const absl::Status &status) {
  return std::string(status.message());
}

inline absl::Status invalidArgument(const std::string &message) {
  return absl::InvalidArgumentError(message);
}

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_SRC_STRINGS_H
