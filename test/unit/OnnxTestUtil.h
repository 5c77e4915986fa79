//===- OnnxTestUtil.h - Helpers of the ONNX importer tests ------*- C++ -*-===//
//
// Importing with the diagnostics collected, and a small builder of ONNX
// models for the cases the exported test models do not cover.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TEST_UNIT_ONNXTESTUTIL_H
#define CLEAVE_TEST_UNIT_ONNXTESTUTIL_H

#include "cleave/Importers/OnnxImporter.h"

#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"

#include "onnx/onnx_pb.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

namespace cleave::testing {

/// An import and the error diagnostics it emitted.
struct Import {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<std::string> errors;
  /// Per error, the file its location names.
  std::vector<std::string> errorFiles;

  mlir::func::FuncOp forward() {
    return module->lookupSymbol<mlir::func::FuncOp>("forward");
  }
  std::string allErrors() const {
    std::string all;
    for (const std::string &e : errors)
      all += e + "\n";
    return all;
  }
  /// The shape of result `i` of @forward.
  llvm::SmallVector<int64_t> resultShape(unsigned i = 0) {
    auto type = llvm::cast<mlir::RankedTensorType>(
        forward().getFunctionType().getResult(i));
    return llvm::SmallVector<int64_t>(type.getShape());
  }
  /// Elements of the trainable (or frozen) graph.param ops.
  int64_t paramElements(bool trainable) {
    int64_t n = 0;
    module->walk([&](graph::ParamOp op) {
      if (op.isTrainable() == trainable)
        n += graph::numElements(op.getType());
    });
    return n;
  }
  template <typename OpTy> int count() {
    int n = 0;
    module->walk([&](OpTy) { ++n; });
    return n;
  }
};

inline Import importFile(mlir::MLIRContext &ctx, llvm::StringRef path,
                         const ImportOptions &options) {
  Import result;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &diag) {
    if (diag.getSeverity() != mlir::DiagnosticSeverity::Error)
      return mlir::success();
    result.errors.push_back(diag.str());
    std::string file;
    diag.getLocation()->walk([&](mlir::Location loc) {
      if (auto fileLoc = llvm::dyn_cast<mlir::FileLineColLoc>(loc))
        file = fileLoc.getFilename().str();
      return mlir::WalkResult::advance();
    });
    result.errorFiles.push_back(file);
    return mlir::success();
  });
  result.module = importOnnxFile(ctx, path, options);
  return result;
}

/// Builds an opset-17 (by default) ONNX model in memory.
class ModelBuilder {
public:
  explicit ModelBuilder(int64_t opset = 17) {
    model.set_ir_version(8);
    model.set_producer_name("cleave-unit-tests");
    auto *import = model.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    model.mutable_graph()->set_name("test");
  }

  void input(llvm::StringRef name, int32_t dtype,
             llvm::ArrayRef<int64_t> dims) {
    valueInfo(graph()->add_input(), name, dtype, dims);
  }
  /// A graph output of rank `rank` whose dims are left for the importer
  /// to compute (the checker wants a shape, not its sizes).
  void output(llvm::StringRef name, int rank,
              int32_t dtype = onnx::TensorProto::FLOAT) {
    onnx::ValueInfoProto *info = graph()->add_output();
    info->set_name(name.str());
    auto *type = info->mutable_type()->mutable_tensor_type();
    type->set_elem_type(dtype);
    auto *shape = type->mutable_shape();
    for (int i = 0; i < rank; ++i)
      shape->add_dim();
  }
  void floats(llvm::StringRef name, llvm::ArrayRef<int64_t> dims,
              float fill = 0.5f) {
    onnx::TensorProto *t = tensor(name, onnx::TensorProto::FLOAT, dims);
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    std::vector<float> data(n, fill);
    t->set_raw_data(std::string(reinterpret_cast<const char *>(data.data()),
                                data.size() * sizeof(float)));
  }
  /// A float initializer holding `values` (row-major, dims' product many).
  void floatValues(llvm::StringRef name, llvm::ArrayRef<int64_t> dims,
                   llvm::ArrayRef<float> values) {
    onnx::TensorProto *t = tensor(name, onnx::TensorProto::FLOAT, dims);
    t->set_raw_data(std::string(reinterpret_cast<const char *>(values.data()),
                                values.size() * sizeof(float)));
  }
  void ints(llvm::StringRef name, llvm::ArrayRef<int64_t> values) {
    onnx::TensorProto *t = tensor(name, onnx::TensorProto::INT64,
                                  {static_cast<int64_t>(values.size())});
    for (int64_t v : values)
      t->add_int64_data(v);
  }
  /// An integer initializer of `dtype` (int32_data holds the types of 32
  /// bits or fewer, int64_data int64).
  void typedInts(llvm::StringRef name, int32_t dtype,
                 llvm::ArrayRef<int64_t> dims, llvm::ArrayRef<int64_t> values) {
    onnx::TensorProto *t = tensor(name, dtype, dims);
    for (int64_t v : values) {
      if (dtype == onnx::TensorProto::INT64)
        t->add_int64_data(v);
      else
        t->add_int32_data(static_cast<int32_t>(v));
    }
  }
  void scalar(llvm::StringRef name, float value) {
    onnx::TensorProto *t = tensor(name, onnx::TensorProto::FLOAT, {});
    t->add_float_data(value);
  }

  /// A Constant node (not an initializer: float initializers are weights).
  void constant(llvm::StringRef name, float value) {
    onnx::NodeProto &n = node("Constant", name, {}, {});
    n.add_output(name.str());
    floatAttr(n, "value_float", value);
  }

  onnx::NodeProto &node(llvm::StringRef opType, llvm::StringRef name,
                        std::initializer_list<const char *> inputs,
                        std::initializer_list<const char *> outputs) {
    onnx::NodeProto *node = graph()->add_node();
    node->set_op_type(opType.str());
    node->set_name(name.str());
    for (const char *i : inputs)
      node->add_input(i);
    for (const char *o : outputs)
      node->add_output(o);
    return *node;
  }
  static void intAttr(onnx::NodeProto &node, llvm::StringRef name, int64_t v) {
    auto *a = addAttr(node, name, onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void floatAttr(onnx::NodeProto &node, llvm::StringRef name, float v) {
    auto *a = addAttr(node, name, onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void intsAttr(onnx::NodeProto &node, llvm::StringRef name,
                       llvm::ArrayRef<int64_t> v) {
    auto *a = addAttr(node, name, onnx::AttributeProto::INTS);
    for (int64_t x : v)
      a->add_ints(x);
  }
  /// A tensor attribute `name` of `node`, to fill in.
  static onnx::TensorProto *tensorAttr(onnx::NodeProto &node,
                                       llvm::StringRef name) {
    return addAttr(node, name, onnx::AttributeProto::TENSOR)->mutable_t();
  }
  static void stringAttr(onnx::NodeProto &node, llvm::StringRef name,
                         const char *v) {
    auto *a = addAttr(node, name, onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  onnx::ModelProto &proto() { return model; }

  /// Writes the model to a temporary file, imports it and removes it.
  Import import(mlir::MLIRContext &ctx,
                const ImportOptions &options = ImportOptions()) {
    llvm::SmallString<128> path;
    EXPECT_FALSE(
        llvm::sys::fs::createTemporaryFile("cleave-test", "onnx", path));
    {
      std::ofstream out(path.str().str(), std::ios::binary);
      EXPECT_TRUE(model.SerializeToOstream(&out));
    }
    Import result = importFile(ctx, path, options);
    llvm::sys::fs::remove(path);
    return result;
  }

private:
  onnx::GraphProto *graph() { return model.mutable_graph(); }
  static void valueInfo(onnx::ValueInfoProto *info, llvm::StringRef name,
                        int32_t dtype, llvm::ArrayRef<int64_t> dims) {
    info->set_name(name.str());
    auto *type = info->mutable_type()->mutable_tensor_type();
    type->set_elem_type(dtype);
    auto *shape = type->mutable_shape();
    for (int64_t d : dims)
      shape->add_dim()->set_dim_value(d);
  }
  onnx::TensorProto *tensor(llvm::StringRef name, int32_t dtype,
                            llvm::ArrayRef<int64_t> dims) {
    onnx::TensorProto *t = graph()->add_initializer();
    t->set_name(name.str());
    t->set_data_type(dtype);
    for (int64_t d : dims)
      t->add_dims(d);
    return t;
  }
  static onnx::AttributeProto *addAttr(onnx::NodeProto &node,
                                       llvm::StringRef name,
                                       onnx::AttributeProto::AttributeType t) {
    onnx::AttributeProto *a = node.add_attribute();
    a->set_name(name.str());
    a->set_type(t);
    return a;
  }

  onnx::ModelProto model;
};

/// Expects that importing `m` fails with an error containing `message`
/// (`what` names the case in the failure).
inline void expectImportError(ModelBuilder &m, llvm::StringRef message,
                              llvm::StringRef what) {
  mlir::MLIRContext ctx;
  Import import = m.import(ctx);
  EXPECT_FALSE(import.module) << what.str();
  EXPECT_NE(import.allErrors().find(message.str()), std::string::npos)
      << what.str() << ": " << import.allErrors();
}

} // namespace cleave::testing

#endif // CLEAVE_TEST_UNIT_ONNXTESTUTIL_H
