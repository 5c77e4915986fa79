//===- OnnxOpConversionTest.cpp - ONNX operator semantics -----------------===//
//
// Small models built with the ONNX protobuf API, one concern per test: the
// shape rules of each operator family, the LayerNorm pattern and its
// fallback, weights as resources, and per-node diagnostics. ONNX shape
// inference cross-checks the importer on every value it can type, so a
// wrong shape also shows as an import error here.
//
//===----------------------------------------------------------------------===//

#include "OnnxTestUtil.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <cstring>

using namespace mlir;
using namespace cleave;
using namespace cleave::testing;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;
using Dims = SmallVector<int64_t>;

TEST(OnnxOpConversion, ShapeOperators) {
  ModelBuilder m;
  m.input("x", kFloat, {2, 3, 4});
  m.floats("c", {3, 1});
  m.ints("shape", {0, -1});
  m.ints("starts", {-3});
  m.ints("ends", {100});
  m.ints("axes_last", {-1});
  m.ints("axes_u", {0, -1});
  m.ints("axes_0", {0});
  m.ints("axes_1", {1});
  m.ints("target", {2, 3, 4});
  m.node("Reshape", "reshape", {"x", "shape"}, {"r"});
  m.node("Slice", "slice", {"x", "starts", "ends", "axes_last"}, {"s"});
  m.node("Unsqueeze", "unsqueeze", {"x", "axes_u"}, {"u"});
  m.node("Squeeze", "squeeze", {"u", "axes_0"}, {"q"});
  ModelBuilder::intAttr(m.node("Flatten", "flatten", {"x"}, {"f"}), "axis", 2);
  m.node("Transpose", "transpose", {"x"}, {"t"});
  ModelBuilder::intAttr(m.node("Split", "split", {"x"}, {"sp0", "sp1"}), "axis",
                        2);
  ModelBuilder::intAttr(m.node("ReduceSum", "reduce", {"x", "axes_1"}, {"rs"}),
                        "keepdims", 0);
  m.node("Expand", "expand", {"c", "target"}, {"e"});
  for (auto [out, rank] : {std::pair{"r", 2},
                           {"s", 3},
                           {"u", 5},
                           {"q", 4},
                           {"f", 2},
                           {"t", 3},
                           {"sp0", 3},
                           {"sp1", 3},
                           {"rs", 2},
                           {"e", 3}})
    m.output(out, rank);

  MLIRContext ctx;
  Import import = m.import(ctx);
  ASSERT_TRUE(import.module) << import.allErrors();
  SmallVector<Dims> expected = {
      {2, 12},   {2, 3, 3}, {1, 2, 3, 4, 1}, {2, 3, 4, 1}, {6, 4},
      {4, 3, 2}, {2, 3, 2}, {2, 3, 2},       {2, 4},       {2, 3, 4}};
  for (auto [i, shape] : llvm::enumerate(expected))
    EXPECT_EQ(import.resultShape(i), shape) << "result " << i;
  // A negative start counts from the end, an end past it clamps.
  import.module->walk([](graph::SliceOp op) {
    EXPECT_EQ(op.getStarts(), (ArrayRef<int64_t>{0, 0, 1}));
  EXPECT_EQ(op.getLimits(), (ArrayRef<int64_t>{2, 3, 4}));
});
// Expand of a run-time tensor broadcasts through a multiply by ones.
EXPECT_EQ(import.count<graph::MulOp>(), 1);
} // namespace

TEST(OnnxOpConversion, MatMulOfVectorsAndGemm) {
  ModelBuilder m;
  m.input("a", kFloat, {4});
  m.input("x", kFloat, {2, 3, 4});
  m.input("w3", kFloat, {2, 4, 5});
  m.input("ga", kFloat, {4, 3});
  m.floats("w", {4, 5});
  m.floats("v", {4});
  m.floats("c", {5});
  m.node("MatMul", "vec_mat", {"a", "w"}, {"m1"});
  m.node("MatMul", "vec_batch", {"a", "w3"}, {"m2"});
  m.node("MatMul", "batch_vec", {"x", "v"}, {"m3"});
  onnx::NodeProto &gemm = m.node("Gemm", "gemm", {"ga", "w", "c"}, {"g"});
  ModelBuilder::intAttr(gemm, "transA", 1);
  ModelBuilder::floatAttr(gemm, "alpha", 0.5f);
  ModelBuilder::floatAttr(gemm, "beta", 2.0f);
  for (auto [out, rank] : {std::pair{"m1", 1}, {"m2", 2}, {"m3", 2}, {"g", 2}})
    m.output(out, rank);

  MLIRContext ctx;
  Import import = m.import(ctx);
  ASSERT_TRUE(import.module) << import.allErrors();
  EXPECT_EQ(import.resultShape(0), (Dims{5}));
  EXPECT_EQ(import.resultShape(1), (Dims{2, 5}));
  EXPECT_EQ(import.resultShape(2), (Dims{2, 3}));
  EXPECT_EQ(import.resultShape(3), (Dims{3, 5}));
  int transposed = 0;
  import.module->walk([&](graph::MatmulOp op) {
    transposed += op.getTransposeLhs();
  EXPECT_FALSE(op.getTransposeRhs());
});
EXPECT_EQ(transposed, 1);
EXPECT_EQ(import.count<graph::MulOp>(), 2); // alpha and beta
}

TEST(OnnxOpConversion, ConvolutionAndPooling) {
  ModelBuilder m;
  m.input("x", kFloat, {1, 3, 8, 8});
  m.input("y", kFloat, {1, 1, 6, 6});
  m.floats("w", {4, 3, 3, 3});
  onnx::NodeProto &conv = m.node("Conv", "conv", {"x", "w"}, {"c"});
  ModelBuilder::stringAttr(conv, "auto_pad", "SAME_UPPER");
  ModelBuilder::intsAttr(conv, "strides", {2, 2});
  onnx::NodeProto &maxPool = m.node("MaxPool", "max", {"y"}, {"mp"});
  ModelBuilder::intsAttr(maxPool, "kernel_shape", {3, 3});
  ModelBuilder::intsAttr(maxPool, "strides", {2, 2});
  ModelBuilder::intAttr(maxPool, "ceil_mode", 1);
  onnx::NodeProto &avgPool = m.node("AveragePool", "avg", {"y"}, {"ap"});
  ModelBuilder::intsAttr(avgPool, "kernel_shape", {3, 3});
  ModelBuilder::intsAttr(avgPool, "strides", {2, 2});
  m.node("GlobalAveragePool", "gap", {"c"}, {"g"});
  for (const char *out : {"c", "mp", "ap", "g"})
    m.output(out, 4);

  MLIRContext ctx;
  Import import = m.import(ctx);
  ASSERT_TRUE(import.module) << import.allErrors();
  EXPECT_EQ(import.resultShape(0), (Dims{1, 4, 4, 4}));
  EXPECT_EQ(import.resultShape(1), (Dims{1, 1, 3, 3}));
  EXPECT_EQ(import.resultShape(2), (Dims{1, 1, 2, 2}));
  EXPECT_EQ(import.resultShape(3), (Dims{1, 4, 1, 1}));
  // SAME_UPPER puts the odd padding element at the end.
  import.module->walk([](graph::Conv2dOp op) {
    EXPECT_EQ(op.getPadding(), (ArrayRef<int64_t>{0, 0, 1, 1}));
});
// ceil_mode becomes padding at the end.
  import.module->walk([](graph::MaxPool2dOp op) {
    EXPECT_EQ(op.getPadding(), (ArrayRef<int64_t>{0, 0, 2, 2}));
  });
  }

  TEST(OnnxOpConversion, BatchNormStatisticsAreFrozen) {
    ModelBuilder m;
    m.input("x", kFloat, {2, 4, 5, 5});
    m.floats("scale", {4}, 1.0f);
    m.floats("bias", {4}, 0.1f);
    m.floats("mean", {4}, 0.2f);
    m.floats("var", {4}, 0.3f);
    m.node("BatchNormalization", "bn", {"x", "scale", "bias", "mean", "var"},
           {"y"});
    m.output("y", 4);

    MLIRContext ctx;
    Import import = m.import(ctx);
    ASSERT_TRUE(import.module) << import.allErrors();
    EXPECT_EQ(import.resultShape(), (Dims{2, 4, 5, 5}));
    EXPECT_EQ(import.count<graph::BatchNormOp>(), 1);
    EXPECT_EQ(import.paramElements(/*trainable=*/true), 8);
    EXPECT_EQ(import.paramElements(/*trainable=*/false), 8);
  import.module->walk([](graph::ParamOp op) {
    bool statistic = op.getName() == "mean" || op.getName() == "var";
  EXPECT_EQ(op.getFrozen(), statistic) << op.getName().str();
  });
  }

  /// x -> ReduceMean -> Sub -> Pow -> ReduceMean -> Add eps -> Sqrt -> Div
  /// -> Mul scale -> Add bias, on x of [2, 5, 8].
  ModelBuilder decomposedLayerNorm(float exponent,
                                   ArrayRef<int64_t> scaleDims) {
    ModelBuilder m;
    m.input("x", kFloat, {2, 5, 8});
    m.floats("scale", scaleDims, 1.5f);
    m.floats("bias", {8}, 0.25f);
    ModelBuilder::intsAttr(m.node("ReduceMean", "mean", {"x"}, {"mu"}), "axes",
                           {-1});
    m.node("Sub", "sub", {"x", "mu"}, {"d"});
    m.constant("two", exponent);
    m.node("Pow", "pow", {"d", "two"}, {"p"});
    ModelBuilder::intsAttr(m.node("ReduceMean", "var", {"p"}, {"v"}), "axes",
                           {-1});
    m.constant("eps", 1e-5f);
    m.node("Add", "add_eps", {"v", "eps"}, {"ve"});
    m.node("Sqrt", "sqrt", {"ve"}, {"s"});
    m.node("Div", "div", {"d", "s"}, {"n"});
    m.node("Mul", "mul_scale", {"n", "scale"}, {"ns"});
    m.node("Add", "add_bias", {"bias", "ns"}, {"y"});
    m.output("y", 3);
    return m;
  }

  TEST(OnnxOpConversion, DecomposedLayerNormIsRecognised) {
    ModelBuilder m = decomposedLayerNorm(2.0f, {8});
    MLIRContext ctx;
    Import import = m.import(ctx);
    ASSERT_TRUE(import.module) << import.allErrors();
    EXPECT_EQ(import.resultShape(), (Dims{2, 5, 8}));
    ASSERT_EQ(import.count<graph::LayerNormOp>(), 1);
    EXPECT_EQ(import.count<graph::ReduceMeanOp>(), 0);
    EXPECT_EQ(import.count<graph::AddOp>(), 0);
  import.module->walk([](graph::LayerNormOp op) {
    EXPECT_EQ(op.getAxis(), 2u);
  EXPECT_TRUE(op.getScale());
  EXPECT_TRUE(op.getBias());
  EXPECT_NEAR(op.getEpsilon().convertToDouble(), 1e-5, 1e-9);
  });
  }

  TEST(OnnxOpConversion, LayerNormLookalikesStayPrimitive) {
    // Cubed deviations are not a variance: every node is imported as is.
    {
      ModelBuilder m = decomposedLayerNorm(3.0f, {8});
      MLIRContext ctx;
      Import import = m.import(ctx);
      ASSERT_TRUE(import.module) << import.allErrors();
      EXPECT_EQ(import.resultShape(), (Dims{2, 5, 8}));
      EXPECT_EQ(import.count<graph::LayerNormOp>(), 0);
      EXPECT_EQ(import.count<graph::ReduceMeanOp>(), 2);
      EXPECT_EQ(import.count<graph::PowOp>(), 1);
    }
    // A scale that is not of the normalized shape stays a Mul (and the bias
    // an Add) after a layer_norm without affine parameters.
    {
      ModelBuilder m = decomposedLayerNorm(2.0f, {5, 8});
      MLIRContext ctx;
      Import import = m.import(ctx);
      ASSERT_TRUE(import.module) << import.allErrors();
      EXPECT_EQ(import.resultShape(), (Dims{2, 5, 8}));
      ASSERT_EQ(import.count<graph::LayerNormOp>(), 1);
    import.module->walk([](graph::LayerNormOp op) {
      EXPECT_FALSE(op.getScale());
    EXPECT_FALSE(op.getBias());
    });
    EXPECT_EQ(import.count<graph::MulOp>(), 1);
    EXPECT_EQ(import.count<graph::AddOp>(), 1);
  }
  }

  /// PyTorch's exact GELU on x of [2, 5, 8]: x (1 + erf(x / sqrt 2)) 0.5,
  /// or with the half first, (x 0.5)(1 + erf(x / sqrt 2)), or x times
  /// 1/sqrt 2 for the division.
  ModelBuilder decomposedGelu(bool halfFirst, bool multiplyScale,
                              float half = 0.5f) {
    ModelBuilder m;
    m.input("x", kFloat, {2, 5, 8});
    m.constant("root", multiplyScale ? 0.70710677f : 1.4142135f);
    m.constant("one", 1.0f);
    m.constant("half", half);
    m.node(multiplyScale ? "Mul" : "Div", "scale", {"x", "root"}, {"xs"});
    m.node("Erf", "erf", {"xs"}, {"e"});
    m.node("Add", "add_one", {"e", "one"}, {"e1"});
    if (halfFirst) {
      m.node("Mul", "mul_half", {"half", "x"}, {"xh"});
      m.node("Mul", "mul_x", {"xh", "e1"}, {"y"});
    } else {
      m.node("Mul", "mul_x", {"x", "e1"}, {"xe"});
      m.node("Mul", "mul_half", {"xe", "half"}, {"y"});
    }
    m.output("y", 3);
    return m;
  }

  TEST(OnnxOpConversion, DecomposedGeluIsRecognised) {
    for (bool halfFirst : {false, true})
      for (bool multiplyScale : {false, true}) {
        ModelBuilder m = decomposedGelu(halfFirst, multiplyScale);
        MLIRContext ctx;
        Import import = m.import(ctx);
        ASSERT_TRUE(import.module) << import.allErrors();
        EXPECT_EQ(import.resultShape(), (Dims{2, 5, 8}));
        EXPECT_EQ(import.count<graph::GeluOp>(), 1)
            << "half first " << halfFirst << ", multiply " << multiplyScale;
        EXPECT_EQ(import.count<graph::ErfOp>(), 0);
        EXPECT_EQ(import.count<graph::MulOp>(), 0);
        import.module->walk([](graph::GeluOp op) {
          EXPECT_FALSE(op.getApproximateTanh());
        });
      }
  }

  TEST(OnnxOpConversion, GeluLookalikesStayPrimitive) {
    // A different constant is another function: every node stays.
    ModelBuilder m = decomposedGelu(false, false, /*half=*/0.6f);
    MLIRContext ctx;
    Import import = m.import(ctx);
    ASSERT_TRUE(import.module) << import.allErrors();
    EXPECT_EQ(import.resultShape(), (Dims{2, 5, 8}));
    EXPECT_EQ(import.count<graph::GeluOp>(), 0);
    EXPECT_EQ(import.count<graph::ErfOp>(), 1);
    EXPECT_EQ(import.count<graph::MulOp>(), 2);
    // An intermediate read outside the pattern keeps it apart too.
    ModelBuilder shared = decomposedGelu(false, false);
    shared.output("e1", 3);
    MLIRContext ctx2;
    Import second = shared.import(ctx2);
    ASSERT_TRUE(second.module) << second.allErrors();
    EXPECT_EQ(second.count<graph::GeluOp>(), 0);
    EXPECT_EQ(second.count<graph::ErfOp>(), 1);
  }

  TEST(OnnxOpConversion, Opset11OperatorsAreConverted) {
    // Softmax before opset 13 flattens to 2-D at `axis`; the version
    // converter rewrites it, and axes attributes become inputs.
    ModelBuilder m(/*opset=*/11);
    m.input("x", kFloat, {2, 3, 4});
    ModelBuilder::intAttr(m.node("Softmax", "softmax", {"x"}, {"sm"}), "axis",
                          1);
    ModelBuilder::intsAttr(m.node("Unsqueeze", "unsqueeze", {"x"}, {"u"}),
                           "axes", {1});
    onnx::NodeProto &split = m.node("Split", "split", {"x"}, {"a", "b"});
    ModelBuilder::intAttr(split, "axis", 2);
    ModelBuilder::intsAttr(split, "split", {1, 3});
    for (auto [out, rank] : {std::pair{"sm", 3}, {"u", 4}, {"a", 3}, {"b", 3}})
      m.output(out, rank);

    MLIRContext ctx;
    Import import = m.import(ctx);
    ASSERT_TRUE(import.module) << import.allErrors();
    EXPECT_EQ(import.resultShape(0), (Dims{2, 3, 4}));
    EXPECT_EQ(import.resultShape(1), (Dims{2, 1, 3, 4}));
    EXPECT_EQ(import.resultShape(2), (Dims{2, 3, 1}));
    EXPECT_EQ(import.resultShape(3), (Dims{2, 3, 3}));
    // Softmax-11 over axis 1 normalises the 12 trailing elements together.
  import.module->walk([](graph::SoftmaxOp op) {
    EXPECT_EQ(op.getType().getShape(), (ArrayRef<int64_t>{2, 12}));
  });
  }

  TEST(OnnxOpConversion, LargeWeightsBecomeResources) {
    // Exporters name folded weights like "onnx::MatMul_12".
    ModelBuilder m;
    m.input("x", kFloat, {2, 600});
    m.floats("onnx::MatMul_12", {600, 600}, 0.25f); // 1.44 MB
    m.floats("b", {600});
    m.node("MatMul", "matmul", {"x", "onnx::MatMul_12"}, {"xw"});
    m.node("Add", "add", {"xw", "b"}, {"y"});
    m.output("y", 2);

    MLIRContext ctx;
    Import import = m.import(ctx);
    ASSERT_TRUE(import.module) << import.allErrors();
  import.module->walk([](graph::ParamOp op) {
    ASSERT_TRUE(op.getValueAttr());
  if (op.getName() == "onnx::MatMul_12")
    EXPECT_TRUE(isa<DenseResourceElementsAttr>(op.getValueAttr()));
  else
    EXPECT_TRUE(isa<DenseElementsAttr>(op.getValueAttr()));
  });

  // The printed module, resource blob included, parses back the same (in
  // a fresh context: a second blob of the same name would be renamed).
  std::string printed;
  llvm::raw_string_ostream os(printed);
  import.module->print(os);
  MLIRContext ctx2;
  ctx2.loadDialect<graph::GraphDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(printed, &ctx2);
  ASSERT_TRUE(parsed);
  std::string reprinted;
  llvm::raw_string_ostream os2(reprinted);
  parsed->print(os2);
  EXPECT_TRUE(printed == reprinted) << "the round trip changed the module";
  parsed->walk([](graph::ParamOp op) {
    if (op.getName() != "onnx::MatMul_12")
      return;
    auto value = dyn_cast<DenseResourceElementsAttr>(op.getValueAttr());
    ASSERT_TRUE(value);
    ArrayRef<char> blob = value.getRawHandle().getBlob()->getData();
    ASSERT_EQ(blob.size(), 600u * 600u * sizeof(float));
    float first;
    std::memcpy(&first, blob.data(), sizeof(float));
    EXPECT_EQ(first, 0.25f);
  });
  }

  //===----------------------------------------------------------------------===//
  // Per-node diagnostics
  //===----------------------------------------------------------------------===//

  /// The single error of importing `m`, which must fail.
  std::string singleError(ModelBuilder &m) {
    MLIRContext ctx;
    Import import = m.import(ctx);
    EXPECT_FALSE(import.module);
    EXPECT_EQ(import.errors.size(), 1u) << import.allErrors();
    return import.errors.empty() ? "" : import.errors.front();
  }

  TEST(OnnxOpConversion, NegativeSliceStepReversesByGather) {
    // x[3::-2] on a run-time tensor: rows 3 and 1, taken forwards by a
    // strided slice (rows 1 and 3) and reversed by a gather of [1, 0].
    ModelBuilder m;
    m.input("x", kFloat, {4, 4});
    m.ints("starts", {3});
    m.ints("ends", {-100});
    m.ints("axes", {0});
    m.ints("steps", {-2});
    m.node("Slice", "reverse", {"x", "starts", "ends", "axes", "steps"}, {"y"});
    m.output("y", 2);
    MLIRContext ctx;
    Import import = m.import(ctx);
    ASSERT_TRUE(import.module) << import.allErrors();
    int slices = 0, gathers = 0;
    import.module->walk([&](graph::SliceOp op) {
      ++slices;
      EXPECT_EQ(op.getStarts(), ArrayRef<int64_t>({1, 0}));
      EXPECT_EQ(op.getStrides(), ArrayRef<int64_t>({2, 1}));
      EXPECT_EQ(op.getType().getShape(), ArrayRef<int64_t>({2, 4}));
    });
    import.module->walk([&](graph::GatherOp op) {
      ++gathers;
      EXPECT_EQ(op.getAxis(), 0);
      EXPECT_EQ(op.getType().getShape(), ArrayRef<int64_t>({2, 4}));
    });
    EXPECT_EQ(slices, 1);
    EXPECT_EQ(gathers, 1);
  }

  TEST(OnnxOpConversion, IntegerArithmeticOnRunTimeValuesImports) {
    // Position ids from a mask, index arithmetic: integers computed at run
    // time are graph ops on integer tensors (unsigned ONNX types as MLIR's
    // unsigned integers, so that the runtime divides them as such).
    ModelBuilder m;
    m.input("ids", kInt64, {2, 3});
    m.input("bytes", onnx::TensorProto::UINT8, {3});
    m.ints("one", {1});
    m.node("Add", "shift", {"ids", "one"}, {"y"});
    m.node("Div", "halve", {"bytes", "bytes"}, {"q"});
    m.output("y", 2, kInt64);
    m.output("q", 1, onnx::TensorProto::UINT8);
    MLIRContext ctx;
    Import import = m.import(ctx);
    ASSERT_TRUE(import.module) << import.allErrors();
    int adds = 0, divs = 0;
    import.module->walk([&](graph::AddOp op) {
      EXPECT_TRUE(op.getType().getElementType().isSignlessInteger(64));
      ++adds;
    });
    import.module->walk([&](graph::DivOp op) {
      EXPECT_TRUE(op.getType().getElementType().isUnsignedInteger(8));
      ++divs;
    });
    EXPECT_EQ(adds, 1);
    EXPECT_EQ(divs, 1);
  }

  TEST(OnnxOpConversion, BoolArithmeticOnRunTimeValuesIsAnError) {
    ModelBuilder m;
    m.input("mask", onnx::TensorProto::BOOL, {2, 3});
    m.node("Add", "both", {"mask", "mask"}, {"y"});
    m.output("y", 2, onnx::TensorProto::BOOL);
    std::string error = singleError(m);
    EXPECT_NE(error.find("node 'both' (Add): operand 0 must be a number "
                         "tensor, got 'tensor<2x3xi1>'"),
              std::string::npos)
        << error;
  }


  TEST(OnnxOpConversion, RunTimeReshapeTargetIsAnError) {
    ModelBuilder m;
    m.input("x", kFloat, {2, 3});
    m.input("shape", kInt64, {2});
    m.node("Reshape", "reshape", {"x", "shape"}, {"y"});
    m.output("y", 2);
    std::string error = singleError(m);
    EXPECT_NE(error.find("node 'reshape' (Reshape): the target shape (input 1) "
                         "must be integers known at import time"),
              std::string::npos)
        << error;
  }

  TEST(OnnxOpConversion, DeclaredOutputShapeMustAgree) {
    ModelBuilder m;
    m.input("x", kFloat, {2, 3});
    m.ints("axes", {0});
    m.node("Unsqueeze", "unsqueeze", {"x", "axes"}, {"y"});
    m.output("y", 2);
    std::string error = singleError(m);
    EXPECT_NE(error.find("graph output 'y' has shape [1, 2, 3], but the model "
                         "declares [?, ?]"),
              std::string::npos)
        << error;
  }

  TEST(OnnxOpConversion, OldOpsetShapeArithmeticIsFoldedForConversion) {
    // A paddle2onnx-style opset 11 graph: the softmax's input is reshaped
    // to a shape computed from the input's own (Shape, Gather, Concat).
    // Converting Softmax 11 -> 13 needs that input's rank, which libonnx
    // 1.12 cannot infer at opset 11; once --dim binds the inputs the
    // arithmetic is constant, and the importer folds it first.
    ModelBuilder m(11);
    m.input("x", kFloat, {1, 1, 8});
    auto *dims = m.proto()
                     .mutable_graph()
                     ->mutable_input(0)
                     ->mutable_type()
                     ->mutable_tensor_type()
                     ->mutable_shape();
    dims->mutable_dim(0)->set_dim_param("batch");
    dims->mutable_dim(1)->set_dim_param("seq");
    m.ints("lead", {0, 1});
    m.ints("rest", {-1});
    m.node("Shape", "shape", {"x"}, {"s"});
    ModelBuilder::intAttr(m.node("Gather", "gather", {"s", "lead"}, {"g"}),
                          "axis", 0);
    ModelBuilder::intAttr(m.node("Concat", "concat", {"g", "rest"}, {"c"}),
                          "axis", 0);
    m.node("Reshape", "reshape", {"x", "c"}, {"r"});
    ModelBuilder::intAttr(m.node("Softmax", "softmax", {"r"}, {"y"}), "axis",
                          1);
    m.output("y", 3);
    MLIRContext ctx;
    ImportOptions options;
    options.dims = {{"batch", 2}, {"seq", 5}};
    Import import = m.import(ctx, options);
    ASSERT_TRUE(import.module) << import.allErrors();
    EXPECT_EQ(import.resultShape(), (Dims{2, 5, 8}));
    // Opset 11's softmax over axis 1 normalises each batch row's
    // flattened [5 x 8] block: converted, a softmax over the last axis of
    // that block reshaped.
    EXPECT_EQ(import.count<graph::SoftmaxOp>(), 1);
    import.module->walk([&](graph::SoftmaxOp op) {
      EXPECT_EQ(op.getType().getShape().back(), 40);
    });

    // Unbound, the same model is refused naming the dimensions.
    MLIRContext ctx2;
    Import unbound = m.import(ctx2, ImportOptions());
    EXPECT_FALSE(unbound.module);
    EXPECT_NE(unbound.allErrors().find("--dim batch=VALUE"), std::string::npos)
        << unbound.allErrors();
  }

} // namespace
