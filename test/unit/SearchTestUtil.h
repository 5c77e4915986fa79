//===- SearchTestUtil.h - Models and clusters for the search tests -*- C++ -*-===//
//
// Zoo models and parsed modules loaded with the dialects and sharding rules
// the intra-operator search needs, shared by the search's test files.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_SEARCHTESTUTIL_H
#define CLEAVE_TEST_UNIT_SEARCHTESTUTIL_H

#include "cleave/Search/IntraOpSearch.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Dialect/Graph/IR/ShapeInference.h"
#include "cleave/Importers/ModelLoader.h"
#include "cleave/Importers/ModelZoo.h"
#include "cleave/cost_model/Cluster.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

#include <memory>

namespace cleave::search::testutil {

using namespace mlir;

struct Model {
  std::unique_ptr<MLIRContext> ctx = std::make_unique<MLIRContext>();
  OwningOpRef<ModuleOp> module;
  func::FuncOp forward;
};

inline Model load(llvm::StringRef spec) {
  Model m;
  DialectRegistry registry;
  registerCleaveDialects(registry);
  registerShardingStrategyExternalModels(registry);
  m.ctx->appendDialectRegistry(registry);
  auto built = buildZooModel(*m.ctx, spec, {});
  if (!built) {
    ADD_FAILURE() << llvm::toString(built.takeError());
    return m;
  }
  m.module = std::move(*built);
  m.forward = cast<func::FuncOp>(getForwardFunction(*m.module));
  return m;
}

/// The first function of a module given as text.
inline Model parse(llvm::StringRef text) {
  Model m;
  DialectRegistry registry;
  registerCleaveDialects(registry);
  registerShardingStrategyExternalModels(registry);
  m.ctx->appendDialectRegistry(registry);
  m.module = parseSourceString<ModuleOp>(text, m.ctx.get());
  if (!m.module) {
    ADD_FAILURE() << "does not parse";
    return m;
  }
  m.forward = cast<func::FuncOp>(m.module->getBody()->front());
  return m;
}

inline cost::Cluster dgx() {
  auto c = cost::clusterPreset("dgx-a100-80g");
  EXPECT_TRUE(c.ok());
  return *c;
}

inline double totalParamBytes(func::FuncOp f) {
  double bytes = 0;
  f.walk([&](graph::ParamOp p) { bytes += graph::tensorBytes(p.getType()); });
  return bytes;
}

/// The 2-layer GPT on two DGX nodes (a 2 x 8 mesh unless told), each
/// device holding at most 2.5x an even share of the parameters.
class TwoNodeGpt : public ::testing::Test {
protected:
  void SetUp() override {
    m = load("gpt,layers=2,hidden=1024,heads=16,seq=512,vocab=1000,batch=8");
    ASSERT_TRUE(m.forward);
    auto parsed = cost::parseCluster("dgx-a100-80g,nodes=2");
    ASSERT_TRUE(parsed.ok());
    cluster = *parsed;
    options.paramMemoryBytes = 2.5 * totalParamBytes(m.forward) / 16;
  }
  FailureOr<IntraOpProblem> build(llvm::ArrayRef<int64_t> mesh = {2, 8}) {
    return IntraOpProblem::build(m.forward, cluster, mesh, options);
  }
  Model m;
  cost::Cluster cluster;
  IntraOpOptions options;
};

} // namespace cleave::search::testutil

#endif // CLEAVE_TEST_UNIT_SEARCHTESTUTIL_H
