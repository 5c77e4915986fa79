//===- GraphBuilder.h - Convenience layer for building graphs ---*- C++ -*-===//
//
// The zoo builds thousands of ops (gpt3-175b has 96 layers); this wrapper
// keeps each model file about the architecture: it names parameters by a
// scope path ("h.3.attn.q_proj.weight"), tags every op with a NameLoc of its
// scope (so diagnostics and traces say where an op comes from), and relies on
// the ops' type inference for result types.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_IMPORTERS_ZOO_GRAPHBUILDER_H
#define CLEAVE_IMPORTERS_ZOO_GRAPHBUILDER_H

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace cleave::zoo {

class GraphBuilder {
public:
  GraphBuilder(mlir::MLIRContext &ctx, llvm::StringRef modelName);

  /// Enters a naming scope for the lifetime of the returned guard.
  class Scope {
  public:
    Scope(GraphBuilder &b, llvm::StringRef name);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    GraphBuilder &builder;
  };
  Scope scope(llvm::StringRef name) { return Scope(*this, name); }
  /// "h" and 3 give "h.3"; a prefix ending in '_' is joined directly
  /// ("encoder_layer_3"), as torchvision names ViT layers.
  Scope scope(llvm::StringRef prefix, int64_t index) {
    llvm::StringRef sep = prefix.ends_with("_") ? "" : ".";
    return Scope(*this, (prefix + sep + llvm::Twine(index)).str());
  }

  mlir::Value input(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                    mlir::Type elementType = {});
  /// A trainable parameter named `<scope>.<name>`.
  mlir::Value param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape);
  /// A frozen parameter (optimizer does not update it).
  mlir::Value frozenParam(llvm::StringRef name, llvm::ArrayRef<int64_t> shape);
  mlir::Value scalar(double value);

  mlir::Value matmul(mlir::Value a, mlir::Value b, bool transposeA = false,
                     bool transposeB = false);
  mlir::Value add(mlir::Value a, mlir::Value b);
  mlir::Value mul(mlir::Value a, mlir::Value b);
  mlir::Value gelu(mlir::Value x, bool tanh);
  mlir::Value silu(mlir::Value x);
  mlir::Value relu(mlir::Value x);
  mlir::Value tanh(mlir::Value x);
  mlir::Value softmax(mlir::Value x, bool causal);
  mlir::Value layerNorm(mlir::Value x, int64_t features, double eps);
  mlir::Value rmsNorm(mlir::Value x, int64_t features, double eps);
  mlir::Value batchNorm(mlir::Value x, int64_t channels, double eps);
  mlir::Value rope(mlir::Value x, double theta);
  mlir::Value dropout(mlir::Value x, double ratio);
  mlir::Value gather(mlir::Value table, mlir::Value indices);
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  mlir::Value transpose(mlir::Value x, llvm::ArrayRef<int64_t> perm);
  mlir::Value slice(mlir::Value x, int64_t axis, int64_t start, int64_t limit);
  mlir::Value concat(mlir::ValueRange xs, int64_t axis);
  mlir::Value conv2d(mlir::Value x, int64_t outChannels, int64_t kernel,
                     int64_t stride, int64_t pad, bool bias);
  mlir::Value maxPool(mlir::Value x, int64_t kernel, int64_t stride,
                      int64_t pad);
  mlir::Value globalAvgPool(mlir::Value x);
  mlir::Value crossEntropy(mlir::Value logits, mlir::Value labels);

  /// x @ W (+ b): the weight is [in, out] as in GPT-2's Conv1D, so the
  /// matmul needs no transpose.
  mlir::Value linear(mlir::Value x, int64_t in, int64_t out, bool bias);

  static llvm::ArrayRef<int64_t> shapeOf(mlir::Value v);

  /// Finishes the function with `results` as its outputs.
  void finish(mlir::ValueRange results);
  /// Hands over the module (after finish).
  mlir::OwningOpRef<mlir::ModuleOp> takeModule() { return std::move(module); }

  mlir::OpBuilder &builder() { return b; }
  mlir::Location loc();

private:
  std::string qualified(llvm::StringRef name) const;

  mlir::MLIRContext &ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func;
  mlir::OpBuilder b;
  std::vector<std::string> scopes;
};

} // namespace cleave::zoo

#endif // CLEAVE_IMPORTERS_ZOO_GRAPHBUILDER_H
