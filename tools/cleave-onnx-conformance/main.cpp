//===- main.cpp - ONNX's node tests through cleave's importer -------------===//
//
// cleave-onnx-conformance [DATA_DIR] [--filter TEXT] [--failures]
//                         [--unsupported] [--exceptions FILE] [--runtime]
//
// Each directory of ONNX's backend node tests (Debian's libonnx-testdata,
// /usr/share/libonnx-testdata/data/node by default) holds model.onnx and
// test_data_set_*/{input,output}_N.pb. Each model is imported (its integer
// inputs, which fix shapes, made initializers from the test's data where
// every set agrees; short float vectors too where an op needs them at
// import, as Resize's scales); inputs are
// bound by the graph's input names and @forward is run by the reference
// evaluator; with --runtime (the CTest gate) the model is also lowered to
// an inference plan (one CPU rank) and run by the runtime's executor on
// the same inputs, as `cleave compile --optimizer none` and `cleave run
// --input` do. Results are compared with ONNX's tolerances (rtol 1e-3,
// atol 1e-5; integers and booleans exactly).
// A model the importer refuses is "unsupported" with its first error. One
// row per op type (the model's first node), then the totals. Exit 1 when a
// test that imports fails, unless FILE (one test name per line, then why;
// '#' comments) excuses it: every op cleave supports must pass its tests.
// Exit 77 (CTest's skip) when the data is not installed.
//
//===----------------------------------------------------------------------===//

#include "NodeTest.h"
#include "TestData.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace cleave::conformance;

namespace {

struct Row {
  int passed = 0, failed = 0, unsupported = 0;
};

} // namespace

int main(int argc, char **argv) {
  std::string dataDir = "/usr/share/libonnx-testdata/data/node", filter;
  std::string exceptionsFile;
  bool listFailures = false, listUnsupported = false, throughRuntime = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--filter" && i + 1 < argc)
      filter = argv[++i];
    else if (arg == "--failures")
      listFailures = true;
    else if (arg == "--unsupported")
      listUnsupported = true;
    else if (arg == "--runtime")
      throughRuntime = true;
    else if (arg == "--exceptions" && i + 1 < argc)
      exceptionsFile = argv[++i];
    else if (!arg.empty() && arg[0] != '-')
      dataDir = arg;
    else {
      std::fprintf(stderr,
                   "usage: cleave-onnx-conformance [DATA_DIR] [--filter "
                   "TEXT] [--failures] [--unsupported] [--exceptions "
                   "FILE] [--runtime]\n");
      return 2;
    }
  }
  if (!fs::is_directory(dataDir)) {
    std::fprintf(stderr,
                 "cleave-onnx-conformance: error: %s: no such directory "
                 "(install libonnx-testdata)\n",
                 dataDir.c_str());
    return 77;
  }
  std::map<std::string, std::string> excused;
  if (!exceptionsFile.empty()) {
    std::ifstream in(exceptionsFile);
    if (!in) {
      std::fprintf(stderr, "cleave-onnx-conformance: error: %s: cannot read\n",
                   exceptionsFile.c_str());
      return 2;
    }
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#')
        continue;
      size_t space = line.find_first_of(" \t");
      excused[line.substr(0, space)] =
          space == std::string::npos ? "" : line.substr(space + 1);
    }
  }
  std::vector<std::string> unexcused;
  std::vector<fs::path> dirs;
  for (const auto &entry : fs::directory_iterator(dataDir))
    if (entry.is_directory() &&
        entry.path().filename().string().find(filter) != std::string::npos)
      dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  std::map<std::string, Row> rows;
  Row total;
  for (const fs::path &dir : dirs) {
    onnx::ModelProto model;
    if (!readProto(dir / "model.onnx", model) ||
        model.graph().node_size() == 0)
      continue;
    std::string op = model.graph().node(0).op_type();
    std::string detail;
    Outcome outcome = runTest(dir, throughRuntime, detail);
    Row &row = rows[op];
    (outcome == Outcome::Passed   ? row.passed
     : outcome == Outcome::Failed ? row.failed
                                  : row.unsupported)++;
    (outcome == Outcome::Passed   ? total.passed
     : outcome == Outcome::Failed ? total.failed
                                  : total.unsupported)++;
    if (outcome == Outcome::Failed && !excused.count(dir.filename().string()))
      unexcused.push_back(dir.filename().string() + ": " + detail);
    if (listFailures && outcome == Outcome::Failed)
      std::printf("FAILED %s: %s\n", dir.filename().c_str(), detail.c_str());
    if (listUnsupported && outcome == Outcome::Unsupported)
      std::printf("UNSUPPORTED %s: %s\n", dir.filename().c_str(),
                  detail.c_str());
  }
  std::printf("%-28s %7s %7s %12s\n", "op type", "passed", "failed",
              "unsupported");
  for (const auto &[op, row] : rows)
    std::printf("%-28s %7d %7d %12d\n", op.c_str(), row.passed, row.failed,
                row.unsupported);
  std::printf("%-28s %7d %7d %12d\n", "total", total.passed, total.failed,
              total.unsupported);
  for (const std::string &failure : unexcused)
    std::fprintf(stderr, "cleave-onnx-conformance: error: %s\n",
                 failure.c_str());
  return unexcused.empty() ? 0 : 1;
}
