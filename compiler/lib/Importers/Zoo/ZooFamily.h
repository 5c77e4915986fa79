//===- ZooFamily.h - How a model family is described ------------*- C++ -*-===//
//
// A family declares its keys with defaults (the schema that validates user
// overrides) and a build function; presets are named settings of a family.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ZOO_ZOOFAMILY_H
#define CLEAVE_IMPORTERS_ZOO_ZOOFAMILY_H

#include "GraphBuilder.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace cleave::zoo {

/// The settings of one model after defaults, preset and overrides. Values
/// were checked against the family's schema when they were set, so the
/// getters cannot fail.
class Config {
public:
  int64_t integer(llvm::StringRef key) const;
  double real(llvm::StringRef key) const;
  bool flag(llvm::StringRef key) const;
  std::map<std::string, std::string> values;
};

struct KeyDesc {
  const char *key;
  const char *defaultValue; ///< its spelling sets the type: 1, 1.0, true
  const char *help;
};

struct Family {
  const char *name;
  const char *description;
  std::vector<KeyDesc> keys;
  llvm::Error (*build)(GraphBuilder &, const Config &);
};

struct Preset {
  const char *name;
  const char *family;
  const char *settings; ///< comma-separated key=value
  const char *description;
};

// The families, one per file.
Family gptFamily();
Family switchFamily();
Family llamaFamily();
Family moeFamily();
Family bertFamily();
Family vitFamily();
Family resnetFamily();

/// Error helper: a failed precondition of a family's settings.
llvm::Error configError(const llvm::Twine &message);

/// Checks `a % b == 0`, naming both keys on failure.
llvm::Error requireDivisible(const Config &c, llvm::StringRef a,
                             llvm::StringRef b);

} // namespace cleave::zoo

#endif // CLEAVE_IMPORTERS_ZOO_ZOOFAMILY_H
