//===- KeyValueText.cpp - The line format of cluster and profile files ----===//

#include "KeyValueText.h"
#include "Strings.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace cleave::cost {

absl::Status lineError(std::string_view fileName, int line,
                       std::string_view message) {
  return absl::InvalidArgumentError(cat(fileName, ":", line, ": ", message));
}

absl::StatusOr<std::vector<KeyValueLine>>
readKeyValueText(std::string_view text, std::string_view fileName) {
  std::vector<KeyValueLine> lines;
  std::string section;
  int sectionLine = 0;
  int lineNumber = 0;
  for (std::string_view raw : split(text, '\n')) {
    ++lineNumber;
    std::string_view content = raw.substr(0, raw.find('#'));
    content = strip(content);
    if (content.empty())
      continue;
    if (content.front() == '[') {
      if (content.back() != ']')
        return lineError(fileName, lineNumber,
                         "section header is missing its closing ']'");
      std::vector<std::string_view> words =
          splitWords(content.substr(1, content.size() - 2));
      if (words.empty())
        return lineError(fileName, lineNumber, "empty section header");
      section = join(words, " ");
      sectionLine = lineNumber;
      continue;
    }
    size_t equals = content.find('=');
    if (equals == std::string_view::npos)
      return lineError(fileName, lineNumber,
                       cat("expected 'key = value' or '[section]', ", "got '",
                           content, "'"));
    std::string_view key = strip(content.substr(0, equals));
    std::string_view value = strip(content.substr(equals + 1));
    if (key.empty())
      return lineError(fileName, lineNumber, "missing key before '='");
    if (value.empty())
      return lineError(fileName, lineNumber,
                       cat("missing value for key '", key, "'"));
    lines.push_back({section, sectionLine, std::string(key), std::string(value),
                     lineNumber});
  }
  return lines;
}

absl::StatusOr<std::string> readTextFile(const std::string &path) {
  // A directory opens as a stream on Linux and reads as nothing.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return absl::InvalidArgumentError(cat("'", path, "' is a directory"));
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(cat("cannot open '", path, "'"));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad())
    return absl::DataLossError(cat("cannot read '", path, "'"));
  return contents.str();
}

} // namespace cleave::cost
