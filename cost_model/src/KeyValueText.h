//===- KeyValueText.h - Lines of cluster and profile files ------*- C++ -*-===//
//
// Both file kinds are lines of `key = value` grouped under `[section]`
// headers, with `#` starting a comment. This reader only splits lines; the
// meaning of sections and keys belongs to each file kind.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_SRC_KEYVALUETEXT_H
#define CLEAVE_COST_MODEL_SRC_KEYVALUETEXT_H

#include "absl/status/statusor.h"

#include <string>
#include <string_view>
#include <vector>

namespace cleave::cost {

struct KeyValueLine {
  /// The text between the brackets of the last header, words separated by
  /// single spaces; empty before the first header.
  std::string section;
  /// The line of that header (0 before the first).
  int sectionLine = 0;
  std::string key;
  std::string value;
  int line = 0;
};

absl::StatusOr<std::vector<KeyValueLine>>
readKeyValueText(std::string_view text, std::string_view fileName);

/// "fileName:line: message", the form compilers use.
absl::Status lineError(std::string_view fileName, int line,
                       std::string_view message);

/// Reads a whole file; the error names the path.
absl::StatusOr<std::string> readTextFile(const std::string &path);

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_SRC_KEYVALUETEXT_H
