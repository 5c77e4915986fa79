//===- InspectCommand.cpp - `cleave inspect`: show a plan artifact --------===//

#include "Commands.h"
#include "ToolSupport.h"
#include "inspect/Inspect.h"

#include "cleave/runtime/plan/PlanIO.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace cleave::tool {

int runInspect(const InspectArgs &args) {
  // Inspection shows where the weights are, never their values: a plan of
  // many gigabytes is inspected without reading them.
  if (int code = checkOutputPath(args.trace, "--trace"))
    return code;
  if (int code = checkOutputPath(args.html, "--html"))
    return code;
  if (!args.measured.empty() && args.html.empty())
    return badUsage("--measured draws a run's trace in the HTML report: "
                    "give --html FILE too");
  std::string measured;
  if (!args.measured.empty()) {
    auto text = MemoryBuffer::getFile(args.measured);
    if (!text)
      return badUsage("--measured " + Twine(args.measured) + ": " +
                      text.getError().message());
    measured = (*text)->getBuffer().str();
    if (Expected<json::Value> parsed = json::parse(measured); !parsed)
      return badUsage("--measured " + Twine(args.measured) +
                      ": not a Chrome trace (JSON) as cleave run --trace "
                      "writes: " + toString(parsed.takeError()));
  }
  auto loaded = plan::readPlanFile(args.plan, plan::Weights::kSkip);
  if (!loaded.ok())
    return badUsage(std::string(loaded.status().message()));
  const plan::Plan &plan = *loaded;
  if (!args.trace.empty())
    if (absl::Status s = inspect::writeSimulatedTrace(plan, args.trace);
        !s.ok())
      return failure(std::string(s.message()));
  if (!args.html.empty()) {
    std::error_code ec;
    raw_fd_ostream file(args.html, ec);
    if (ec)
      return failure("--html " + Twine(args.html) + ": " + ec.message());
    file << inspect::formatPlanHtml(plan, measured);
    file.close();
    if (file.has_error())
      return failure("--html " + Twine(args.html) + ": cannot write it");
    outs() << "wrote: " << args.html << " (open it in a browser)\n";
    return kOk;
  }
  if (args.rank) {
    auto text = inspect::formatRankProgram(plan, *args.rank);
    if (!text.ok())
      return badUsage("--rank: " + Twine(std::string(text.status().message())));
    outs() << *text;
    return kOk;
  }
  if (args.mlir) {
    auto text = inspect::planMlir(plan);
    if (!text.ok())
      return failure(std::string(text.status().message()));
    outs() << *text;
    return kOk;
  }
  outs() << (args.json ? inspect::formatPlanJson(plan)
                       : inspect::formatPlanSummary(plan));
  return kOk;
}

} // namespace cleave::tool
