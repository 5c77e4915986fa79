//===- TestPlans.h - Plans built by hand for tests --------------*- C++ -*-===//
//
// Plans the way the compiler will write them, built without the compiler,
// so the reader, the validator and `cleave inspect` can be tested alone.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_PLAN_TESTPLANS_H
#define CLEAVE_TEST_UNIT_PLAN_TESTPLANS_H

#include "cleave/runtime/plan/plan.pb.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace cleave::plan::testing {

/// A complete, valid plan of a 2-layer GPT-like model (vocabulary 16, hidden
/// 8, MLP 32, sequence 4) on a pp=2 x tp=2 mesh: two programs ("stage0",
/// "stage1"), 1F1B over 2 microbatches of 2, AdamW, a vocabulary-parallel
/// embedding tied to the head. Stage 0 forward runs two tp all-reduces and
/// one send to the next stage per microbatch.
Plan makeTwoStagePlan();

/// A GPT-3-shaped plan (`layers` layers of 4 parameters each, pp x dp x tp
/// ranks, one program per stage, 1F1B over `microbatches`): big enough to
/// check that inspect stays fast and folds identical layers.
Plan makeLargePlan(int layers, int pp, int dp, int tp, int microbatches);

/// Appends tensors, segments and instructions to a program, laying tensors
/// out back to back in its arena (arena_bytes and memory follow).
class ProgramBuilder {
public:
  explicit ProgramBuilder(Program *program) : program(program) {}

  /// Returns the new tensor's id.
  int tensor(const std::string &name, TensorDecl::Kind kind,
             std::vector<int64_t> shape, DType dtype = F32, int slots = 1,
             int paramIndex = 0);
  TensorDecl &at(int id) { return *program->mutable_tensors(id); }

  /// Returns the new segment's index.
  int segment(const std::string &name, Segment::Kind kind, int chunk = 0);
  Instruction &inst(int segment, const std::string &op,
                    std::vector<int32_t> inputs, std::vector<int32_t> outputs,
                    const std::string &location = "");
  void step(int segment, int microbatch);

  /// Fills Program.memory from the tensors (bytes x slots per kind).
  void finish();

private:
  Program *program;
};

Attr strAttr(const std::string &s);
Attr intAttr(int64_t i);
Attr boolAttr(bool b);
Attr stringsAttr(std::initializer_list<std::string> values);

} // namespace cleave::plan::testing

#endif // CLEAVE_TEST_UNIT_PLAN_TESTPLANS_H
