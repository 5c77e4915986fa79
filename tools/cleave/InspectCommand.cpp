//===- InspectCommand.cpp - `cleave inspect`: show a plan artifact --------===//

#include "Commands.h"
#include "ToolSupport.h"
#include "inspect/Inspect.h"

#include "cleave/runtime/plan/PlanIO.h"

#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace cleave::tool {

int runInspect(const InspectArgs &args) {
  // Inspection shows where the weights are, never their values: a plan of
  // many gigabytes is inspected without reading them.
  if (int code = checkOutputPath(args.trace, "--trace"))
    return code;
  auto loaded = plan::readPlanFile(args.plan, plan::Weights::kSkip);
  if (!loaded.ok())
    return badUsage(std::string(loaded.status().message()));
  const plan::Plan &plan = *loaded;
  if (!args.trace.empty())
    if (absl::Status s = inspect::writeSimulatedTrace(plan, args.trace);
        !s.ok())
      return failure(std::string(s.message()));
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
