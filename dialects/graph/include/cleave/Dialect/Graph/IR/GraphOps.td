//===- GraphOps.td - Operators of the graph dialect --------*- tablegen -*-===//
//
// Lifecycle of every op here: created by an importer (ONNX, model zoo, MLIR
// text) or by the training-graph pass (backward and optimizer ops), priced
// by the cost model through CostOpInterface, annotated by the planner and
// consumed by the SPMD lowering, which emits per-rank programs.
//
// Shape rules live in ShapeInference.cpp as free functions that the
// verifiers, the type inference and the importers all call.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_GRAPHOPS_TD
#define CLEAVE_DIALECT_GRAPH_IR_GRAPHOPS_TD

include "cleave/Dialect/Graph/IR/GraphBase.td"
include "cleave/Dialect/Graph/IR/GraphInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Sources: inputs, parameters, constants
//===----------------------------------------------------------------------===//

def Graph_InputOp : Graph_Op<"input", [Pure, Graph_CostOpInterface]> {
  let summary = "A tensor fed to the model at every step (tokens, images, labels)";
  let description = [{
    Example:
    ```mlir
    %tokens = graph.input "tokens" : tensor<8x2048xi64>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() { return 0; }
    int64_t getBytesRead() { return 0; }
  }];
}

def Graph_ParamOp : Graph_Op<"param", [Pure, Graph_CostOpInterface]> {
  let summary = "A named model parameter (weight), trainable unless `frozen`";
  let description = [{
    Parameters carry the name the model gave them (the ONNX initializer or
    PyTorch state-dict name) so that plans, checkpoints and resharding can
    refer to them. `frozen` marks state that the optimizer does not update
    (batch-norm running statistics). An optional `value` holds the weights
    when the importer had them; planning needs only the type. `aliases`
    are the parameter's other state-dict names where the model ties one
    tensor to several modules (an embedding and the output head): it
    trains once, and checkpoints export it under every name.

    Example:
    ```mlir
    %w = graph.param "h.0.mlp.fc.weight" : tensor<768x3072xf32>
    %m = graph.param "bn1.running_mean" frozen = dense<0.0> : tensor<64xf32> : tensor<64xf32>
    %e = graph.param "lm_head.weight" aliases ["transformer.wte.weight"] : tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, UnitAttr:$frozen,
                       OptionalAttr<ElementsAttr>:$value,
                       OptionalAttr<StrArrayAttr>:$aliases);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $name (`frozen` $frozen^)? (`aliases` $aliases^)? (`=` $value^)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() { return 0; }
    int64_t getBytesRead() { return 0; }
    bool isTrainable() { return !getFrozen(); }
  }];
}

def Graph_ConstantOp : Graph_Op<"constant",
    [ConstantLike, Pure, InferTypeOpAdaptor, Graph_CostOpInterface]> {
  let summary = "A constant tensor (scales, masks, folded shape arithmetic)";
  let description = [{
    Example:
    ```mlir
    %scale = graph.constant dense<0.125> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let extraClassDeclaration = [{
    double getFlops() { return 0; }
    int64_t getBytesRead() { return 0; }
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise operators (numpy broadcasting)
//===----------------------------------------------------------------------===//

class Graph_UnaryOp<string mnemonic, int flopsPerElement, list<Trait> traits = []>
    : Graph_Op<mnemonic, traits # [Pure, SameOperandsAndResultType,
                                   Graph_CostOpInterface]> {
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let description = "FLOPs: " # flopsPerElement # " per element.";
  code flopsCode = "double getFlops() { return " # flopsPerElement #
      " * ::cleave::graph::numElements(getType()); }";
  let extraClassDeclaration = flopsCode;
}

def Graph_NegOp : Graph_UnaryOp<"neg", 1> { let summary = "-x"; }
def Graph_ExpOp : Graph_UnaryOp<"exp", 1> { let summary = "e^x"; }
def Graph_LogOp : Graph_UnaryOp<"log", 1> { let summary = "ln x"; }
def Graph_SqrtOp : Graph_UnaryOp<"sqrt", 1> { let summary = "square root"; }
def Graph_RsqrtOp : Graph_UnaryOp<"rsqrt", 2> { let summary = "1 / sqrt(x)"; }
def Graph_ReluOp : Graph_UnaryOp<"relu", 1> { let summary = "max(x, 0)"; }
def Graph_TanhOp : Graph_UnaryOp<"tanh", 1> { let summary = "tanh"; }
def Graph_ErfOp : Graph_UnaryOp<"erf", 1> { let summary = "error function"; }
def Graph_SinOp : Graph_UnaryOp<"sin", 1> { let summary = "sine"; }
def Graph_CosOp : Graph_UnaryOp<"cos", 1> { let summary = "cosine"; }
def Graph_AtanOp : Graph_UnaryOp<"atan", 1> { let summary = "arctangent"; }
def Graph_FloorOp : Graph_UnaryOp<"floor", 1> {
  let summary = "largest integer not above x (its gradient is 0)";
}
def Graph_SigmoidOp : Graph_UnaryOp<"sigmoid", 3> {
  let summary = "1 / (1 + e^-x)";
}
def Graph_SiluOp : Graph_UnaryOp<"silu", 4> { let summary = "x * sigmoid(x)"; }
def Graph_GeluOp : Graph_UnaryOp<"gelu", 8> {
  let summary = "Gaussian error linear unit, exact (erf) or tanh-approximated";
  let arguments = (ins Graph_FloatTensor:$input, UnitAttr:$approximate_tanh);
  let assemblyFormat = "$input (`tanh` $approximate_tanh^)? attr-dict `:` type($input)";
}

def Graph_DropoutOp : Graph_UnaryOp<"dropout", 2> {
  let summary = "Zeroes elements with probability `ratio`, scales the rest";
  let description = [{
    The mask is a deterministic function of `seed` and the element index, so
    that a partitioned run draws the same mask as the unpartitioned one.
  }];
  let arguments = (ins Graph_FloatTensor:$input, F64Attr:$ratio,
                       DefaultValuedAttr<I64Attr, "0">:$seed);
  let assemblyFormat = "$input `ratio` `=` $ratio attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Graph_StopGradientOp : Graph_UnaryOp<"stop_gradient", 0> {
  let summary = "x, with no gradient flowing back through it";
  let description = [{
    A value the backward pass treats as a constant: the row maximum that
    shifts a softmax for stability (its exact derivative cancels), as the
    vocabulary-parallel cross-entropy built by cleave-spmd-partition uses.
    FLOPs: none (the runtime copies it).
  }];
}

def Graph_CastOp : Graph_Op<"cast", [Pure, Graph_CostOpInterface]> {
  let summary = "Element type conversion (mixed precision)";
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{ double getFlops() { return 0; } }];
}

class Graph_BinaryOp<string mnemonic, int flopsPerElement, list<Trait> traits = [],
                     TypeConstraint operand = Graph_NumericTensor>
    : Graph_Op<mnemonic, traits # [Pure, InferTypeOpAdaptor,
                                   Graph_CostOpInterface]> {
  let arguments = (ins operand:$lhs, operand:$rhs);
  let results = (outs operand:$result);
  let description = "Broadcasts like numpy; both operands have one element "
                    "type. Integers (not bool) wrap around in their type "
                    "and divide towards zero. FLOPs: " # flopsPerElement #
                    " per result element.";
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasVerifier = 1;
  code flopsCode = "double getFlops() { return " # flopsPerElement #
      " * ::cleave::graph::numElements(getType()); }";
  let extraClassDeclaration = flopsCode;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::cleave::graph::inferBroadcastResult(
          loc, {adaptor.getLhs().getType(), adaptor.getRhs().getType()}, types);
    }
    ::llvm::LogicalResult $cppClass::verify() {
      return ::cleave::graph::verifyArithmeticOperands(getOperation());
    }
  }];
}

def Graph_AddOp : Graph_BinaryOp<"add", 1, [Commutative]> { let summary = "a + b"; }
def Graph_SubOp : Graph_BinaryOp<"sub", 1> { let summary = "a - b"; }
def Graph_MulOp : Graph_BinaryOp<"mul", 1, [Commutative]> { let summary = "a * b"; }
def Graph_DivOp : Graph_BinaryOp<"div", 1> { let summary = "a / b"; }
def Graph_PowOp : Graph_BinaryOp<"pow", 1, [], Graph_FloatTensor> {
  let summary = "a ^ b";
}
def Graph_MaxOp : Graph_BinaryOp<"max", 1, [Commutative]> { let summary = "max(a, b)"; }
def Graph_MinOp : Graph_BinaryOp<"min", 1, [Commutative]> { let summary = "min(a, b)"; }

def Graph_ModOp : Graph_Op<"mod", [Pure, InferTypeOpAdaptor,
                                   Graph_CostOpInterface]> {
  let summary = "Integer remainder, broadcasting";
  let description = [{
    ONNX's Mod on integers: the remainder takes the divisor's sign
    (Python's `%`), or with `fmod` the dividend's (C's `%`). A zero divisor
    is a run-time error. Floating-point Mod is composed of div, floor and
    sub by the importer, so that it has gradients.

    ```mlir
    %r = graph.mod %a, %b : tensor<6xi8>, tensor<6xi8>
    %f = graph.mod %a, %b {fmod} : tensor<6xi8>, tensor<6xi8>
    ```
  }];
  let arguments = (ins Graph_IntegerTensor:$lhs, Graph_IntegerTensor:$rhs,
                       UnitAttr:$fmod);
  let results = (outs Graph_IntegerTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() { return ::cleave::graph::numElements(getType()); }
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::cleave::graph::inferBroadcastResult(
          loc, {adaptor.getLhs().getType(), adaptor.getRhs().getType()}, types);
    }
  }];
}

def Graph_BitShiftOp : Graph_Op<"bit_shift", [Pure, InferTypeOpAdaptor,
                                               Graph_CostOpInterface]> {
  let summary = "Bitwise shift of unsigned integers, broadcasting";
  let description = [{
    ONNX's BitShift: each element of `lhs` shifted left (or, with `right`,
    right) by the matching element of `rhs`, both of one unsigned type; a
    shift by the type's width or more gives 0.

    ```mlir
    %r = graph.bit_shift %a, %b {right} : tensor<3xui8>, tensor<3xui8>
    ```
  }];
  let arguments = (ins Graph_IntegerTensor:$lhs, Graph_IntegerTensor:$rhs,
                       UnitAttr:$right);
  let results = (outs Graph_IntegerTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() { return ::cleave::graph::numElements(getType()); }
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::cleave::graph::inferBroadcastResult(
          loc, {adaptor.getLhs().getType(), adaptor.getRhs().getType()}, types);
    }
  }];
}

def Graph_WhereOp : Graph_Op<"where", [Pure, InferTypeOpAdaptor,
                                       Graph_CostOpInterface]> {
  let summary = "cond ? a : b, broadcasting all three";
  let arguments = (ins Graph_BoolTensor:$condition, Graph_Tensor:$lhs,
                       Graph_Tensor:$rhs);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs)
    `,` type($rhs)
  }];
  let extraClassDeclaration = [{
    double getFlops() { return ::cleave::graph::numElements(getType()); }
  }];
}

def Graph_CompareOp : Graph_Op<"compare", [Pure, InferTypeOpAdaptor,
                                           Graph_CostOpInterface]> {
  let summary = "Elementwise comparison with broadcasting, giving i1";
  let description = [{
    `predicate` is one of eq, ne, lt, le, gt, ge. Used by ONNX's Equal and
    Less and by the backward pass of max, min and relu.

    ```mlir
    %m = graph.compare ge, %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
    ```
  }];
  let arguments = (ins StrAttr:$predicate, Graph_NumericTensor:$lhs,
                       Graph_NumericTensor:$rhs);
  let results = (outs Graph_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() { return ::cleave::graph::numElements(getType()); }
  }];
}

def Graph_BroadcastToOp : Graph_Op<"broadcast_to", [Pure,
                                                    Graph_CostOpInterface]> {
  let summary = "Broadcasts a tensor to a larger shape (numpy rules)";
  let description = [{
    ONNX's Expand, and the backward pass of reductions.

    ```mlir
    %b = graph.broadcast_to %x : tensor<4x1xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{ double getFlops() { return 0; } }];
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Graph_MatmulOp : Graph_Op<"matmul", [Pure, InferTypeOpAdaptor,
                                         Graph_CostOpInterface]> {
  let summary = "Batched matrix product with optional transposes";
  let description = [{
    `lhs` is `[B..., M, K]` (or `[B..., K, M]` with `transpose_lhs`), `rhs`
    is `[B..., K, N]` (or `[B..., N, K]` with `transpose_rhs`); the batch
    dimensions broadcast like numpy, which also expresses grouped-query
    attention without repeating keys. FLOPs: 2 * batch * M * N * K.

    ```mlir
    %s = graph.matmul %q, %k transpose_rhs : tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$lhs, Graph_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)?
    (`transpose_rhs` $transpose_rhs^)? attr-dict `:` type($lhs) `,` type($rhs)
  }];
  let extraClassDeclaration = [{
    double getFlops();
    /// The contracted size K.
    int64_t getContractionSize();
  }];
}

//===----------------------------------------------------------------------===//
// Normalisation and attention building blocks
//===----------------------------------------------------------------------===//

def Graph_SoftmaxOp : Graph_Op<"softmax", [Pure, SameOperandsAndResultType,
                                           Graph_CostOpInterface]> {
  let summary = "Softmax along one axis, optionally with a causal mask";
  let description = [{
    With `causal`, the axis must be the last one and the input at least 2-D
    (`[..., query, key]`); key j is masked for query i when
    j > i + (keys - queries). FLOPs: 5 per element (max, sub, exp, sum, div).

    `query_blocks` (set by cleave-spmd-partition when the queries are split
    over a mesh axis, as context parallelism splits the sequence) says the
    queries are this device's block of those split over the named axes:
    with n devices on them and this one at index g, query i is global query
    g * queries + i of n * queries, so key j is masked when
    j > g * queries + i + (keys - n * queries).

    `zigzag` (with `query_blocks`; set by cleave-spmd-partition under
    zig-zag context parallelism) says the block is two chunks of the
    sequence cut into 2n: chunk g in the first half of the queries and
    chunk 2n - 1 - g in the second, so that every device's block has as
    many unmasked scores as any other's. The keys stay in sequence order.

    ```mlir
    %p = graph.softmax %s axis = 3 causal : tensor<2x12x128x128xf32>
    %b = graph.softmax %t axis = 3 causal query_blocks ["cp"] : tensor<2x12x64x128xf32>
    %z = graph.softmax %t axis = 3 causal query_blocks ["cp"] zigzag : tensor<2x12x64x128xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, I64Attr:$axis,
                       UnitAttr:$causal,
                       OptionalAttr<StrArrayAttr>:$query_blocks,
                       UnitAttr:$zigzag);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axis` `=` $axis (`causal` $causal^)?
    (`query_blocks` $query_blocks^)? (`zigzag` $zigzag^)? attr-dict `:`
    type($input)
  }];
  // Only the partitioner places query blocks: importers build without.
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::IntegerAttr":$axis, "::mlir::UnitAttr":$causal), [{
      build($_builder, $_state, input, axis, causal, ::mlir::ArrayAttr());
    }]>,
    OpBuilder<(ins "::mlir::Value":$input, "int64_t":$axis, "bool":$causal), [{
      build($_builder, $_state, input, $_builder.getI64IntegerAttr(axis),
            causal ? $_builder.getUnitAttr() : ::mlir::UnitAttr(), ::mlir::ArrayAttr());
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() { return 5 * ::cleave::graph::numElements(getType()); }
  }];
}

def Graph_LayerNormOp : Graph_Op<"layer_norm", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["input", "result"]>, Graph_CostOpInterface]> {
  let summary = "Layer normalisation over the dimensions from `axis` on";
  let description = [{
    Normalises over `input.shape[axis:]` (ONNX LayerNormalization's `axis`);
    `scale` and `bias` have exactly that shape. FLOPs: 8 per element.

    ```mlir
    %y = graph.layer_norm %x scale(%g : tensor<768xf32>) bias(%b : tensor<768xf32>) axis = 2 epsilon = 1.0e-05 : tensor<4x128x768xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       Optional<Graph_FloatTensor>:$scale,
                       Optional<Graph_FloatTensor>:$bias,
                       I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`scale` `(` $scale^ `:` type($scale) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    `axis` `=` $axis `epsilon` `=` $epsilon attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() { return 8 * ::cleave::graph::numElements(getType()); }
  }];
}

def Graph_RmsNormOp : Graph_Op<"rms_norm", [Pure,
    AllTypesMatch<["input", "result"]>, Graph_CostOpInterface]> {
  let summary = "Root-mean-square normalisation over the dimensions from `axis` on";
  let description = [{
    y = x / sqrt(mean(x^2) + epsilon) * scale, as in LLaMA. FLOPs: 5 per element.

    ```mlir
    %y = graph.rms_norm %x scale(%g : tensor<4096xf32>) axis = 2 epsilon = 1.0e-05 : tensor<1x16x4096xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       Optional<Graph_FloatTensor>:$scale,
                       I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`scale` `(` $scale^ `:` type($scale) `)`)?
    `axis` `=` $axis `epsilon` `=` $epsilon attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() { return 5 * ::cleave::graph::numElements(getType()); }
  }];
}

def Graph_BatchNormOp : Graph_Op<"batch_norm", [Pure,
    AllTypesMatch<["input", "result"]>, Graph_CostOpInterface]> {
  let summary = "Batch normalisation over channel axis 1 (NCHW)";
  let description = [{
    `scale`, `bias`, `mean` and `variance` are `[C]`. With `training`, the
    statistics of the batch are used (and `mean`/`variance` are the running
    statistics the step would update); otherwise the given statistics.
    FLOPs: 4 per element (8 with `training`).
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$scale,
                       Graph_FloatTensor:$bias, Graph_FloatTensor:$mean,
                       Graph_FloatTensor:$variance, F64Attr:$epsilon,
                       UnitAttr:$training);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance `epsilon` `=` $epsilon
    (`training` $training^)? attr-dict `:` type($input) `,` type($scale)
    `,` type($bias) `,` type($mean) `,` type($variance)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() {
      return (getTraining() ? 8 : 4) * ::cleave::graph::numElements(getType());
    }
  }];
}

def Graph_RopeOp : Graph_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>,
                                     Graph_CostOpInterface]> {
  let summary = "Rotary position embedding of [batch, seq, heads, head_dim]";
  let description = [{
    Rotates pairs (i, i + head_dim/2) of the last dimension by the angle
    pos * theta^(-2i/head_dim), pos being the index along dimension 1 plus
    `offset` (LLaMA's rotate-half convention); `inverse` rotates by the
    negated angle, which is the backward pass. FLOPs: 3 per element.
    `position_blocks` (set by cleave-spmd-partition when the sequence is
    split over mesh axes, as context parallelism does) adds this device's
    block index on those axes times the local sequence length; with
    `zigzag`, the block is two chunks of the sequence cut into 2n, chunk g
    then chunk 2n - 1 - g (graph.softmax's zig-zag blocks).
    With `positions` (`[batch, seq]` integers, generation: sequences of
    different lengths, a few new tokens each) every token is rotated by its
    own position instead, and `offset` and the blocks do not apply.
  }];
  let arguments = (ins Graph_FloatTensor:$input,
                       Optional<Graph_IndexTensor>:$positions, F64Attr:$theta,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       UnitAttr:$inverse,
                       OptionalAttr<StrArrayAttr>:$position_blocks,
                       UnitAttr:$zigzag);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`at` $positions^ `:` type($positions))? `theta` `=` $theta
    (`inverse` $inverse^)?
    (`position_blocks` $position_blocks^)? (`zigzag` $zigzag^)? attr-dict
    `:` type($input)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() { return 3 * ::cleave::graph::numElements(getType()); }
  }];
}

def Graph_AttentionOp : Graph_Op<"attention", [Pure, InferTypeOpAdaptor,
                                             Graph_CostOpInterface]> {
  let summary = "Fused scaled dot-product attention (FlashAttention-2)";
  let description = [{
    out = softmax(scale * query key^T, masked) value, as one kernel that
    never holds the score matrix: blocks of queries walk blocks of keys
    with an online softmax, and `lse` keeps each query row's log-sum-exp,
    all the backward pass (graph.attention_grad) needs to recompute the
    probabilities. Made by cleave-fuse-attention from the unfused
    matmul-scale-softmax-matmul chain.

    Shapes: query `[B..., Sq, D]`, key and value `[B'..., Sk, D]`; out
    `[B..., Sq, D]`, lse `[B..., Sq]` (natural log, f32 whatever the
    storage type: the backward exponentiates against it). The key's batch dimensions equal the query's except for a
    trailing run of 1s that broadcasts: grouped-query attention, query
    `[b, kv_heads, group, S, D]` against key `[b, kv_heads, 1, S, D]`.

    `causal` masks key j for query i when j > i + (Sk - Sq). An optional
    `mask` is added to the scaled scores before the softmax (an additive
    mask: 0 where a key is seen, -inf or a large negative where it is not,
    as exporters write padding and custom masks): `[M..., Mq, Sk]` of the
    query's rank and element type, Mq either Sq or 1 (one row for every
    query: key padding), each batch dimension the query's or 1 with the
    query's kept dimensions one contiguous run. It gets no gradient (the
    fusion only folds masks that depend on no parameter). A query row whose
    every key is masked (-inf) gets output 0. FLOPs: the two
    products, 4 * Sq * Sk * D per batch entry, and 5 per score for
    the softmax; under a causal mask only the unmasked fraction of the
    scores, since wholly masked blocks are skipped.
    `query_blocks` (set by cleave-spmd-partition when the queries are split
    over mesh axes, as context parallelism does) places this device's block
    for the mask, as graph.softmax's does, and so does `zigzag`.

    ```mlir
    %o, %lse = graph.attention %q, %k, %v scale = 1.250000e-01 causal
        : tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>, tensor<2x12x128x64xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$query, Graph_FloatTensor:$key,
                       Graph_FloatTensor:$value,
                       Optional<Graph_FloatTensor>:$mask, F64Attr:$scale,
                       UnitAttr:$causal,
                       OptionalAttr<StrArrayAttr>:$query_blocks,
                       UnitAttr:$zigzag);
  let results = (outs Graph_FloatTensor:$out, Graph_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^ `:` type($mask))?
    `scale` `=` $scale (`causal` $causal^)?
    (`query_blocks` $query_blocks^)? (`zigzag` $zigzag^)? attr-dict `:`
    type($query) `,`
    type($key) `,` type($value)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops();
    /// The products run on tensor cores (they are GEMM tiles).
    bool usesTensorCores() { return true; }
  }];
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Graph_GatherOp : Graph_Op<"gather", [Pure, InferTypeOpAdaptor,
                                         Graph_CostOpInterface]> {
  let summary = "Selects slices of `data` along `axis` (embedding lookup when axis is 0)";
  let description = [{
    Result shape: data[:axis] + indices + data[axis+1:]. Reads only the
    selected slices.

    ```mlir
    %e = graph.gather %wte[%tokens] axis = 0 : tensor<50257x768xf32>, tensor<4x128xi64>
    ```
  }];
  let arguments = (ins Graph_Tensor:$data, Graph_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $data `[` $indices `]` `axis` `=` $axis attr-dict `:` type($data) `,`
    type($indices)
  }];
  let extraClassDeclaration = [{
    double getFlops() { return 0; }
    int64_t getBytesRead() {
      return ::cleave::graph::sumTensorBytes(getOperation()->getResults()) +
             ::cleave::graph::tensorBytes(getIndices().getType());
    }
  }];
}

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure, Graph_CostOpInterface]> {
  let summary = "Reinterprets a tensor with a new shape of the same size";
  let description = [{
    A view: it moves no data, so it reads and writes no bytes.
  }];
  let arguments = (ins Graph_Tensor:$input);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDeclaration = [{
    double getFlops() { return 0; }
    int64_t getBytesRead() { return 0; }
    int64_t getBytesWritten() { return 0; }
  }];
}

def Graph_TransposeOp : Graph_Op<"transpose", [Pure, InferTypeOpAdaptor,
                                               Graph_CostOpInterface]> {
  let summary = "Permutes dimensions: result.shape[i] = input.shape[perm[i]]";
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$input $permutation attr-dict `:` type($input)";
  let extraClassDeclaration = [{ double getFlops() { return 0; } }];
}

def Graph_SliceOp : Graph_Op<"slice", [Pure, InferTypeOpAdaptor,
                                       Graph_CostOpInterface]> {
  let summary = "Strided slice with one start, limit (exclusive) and stride per dimension";
  let arguments = (ins Graph_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$strides);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $input `starts` $starts `limits` $limits `strides` $strides attr-dict `:`
    type($input)
  }];
  let extraClassDeclaration = [{
    double getFlops() { return 0; }
    int64_t getBytesRead() {
      return ::cleave::graph::sumTensorBytes(getOperation()->getResults());
    }
  }];
}

def Graph_ConcatOp : Graph_Op<"concat", [Pure, InferTypeOpAdaptor,
                                         Graph_CostOpInterface]> {
  let summary = "Joins tensors along `axis`";
  let arguments = (ins Variadic<Graph_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = "$inputs `axis` `=` $axis attr-dict `:` type($inputs)";
  let extraClassDeclaration = [{ double getFlops() { return 0; } }];
}

def Graph_SplitOp : Graph_Op<"split", [Pure, InferTypeOpAdaptor,
                                       Graph_CostOpInterface]> {
  let summary = "Splits a tensor along `axis` into pieces of the given sizes";
  let arguments = (ins Graph_Tensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Graph_Tensor>:$results);
  let assemblyFormat = [{
    $input `axis` `=` $axis `sizes` $sizes attr-dict `:` type($input)
  }];
  let extraClassDeclaration = [{ double getFlops() { return 0; } }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Graph_ReduceOp<string mnemonic>
    : Graph_Op<mnemonic, [Pure, InferTypeOpAdaptor, Graph_CostOpInterface]> {
  let arguments = (ins Graph_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdims);
  let results = (outs Graph_FloatTensor:$result);
  let description = "FLOPs: 1 per input element.";
  let assemblyFormat = [{
    $input $axes (`keepdims` $keepdims^)? attr-dict `:` type($input)
  }];
  let extraClassDeclaration = [{
    double getFlops() {
      return ::cleave::graph::numElements(getInput().getType());
    }
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::cleave::graph::inferReduceResult(
          loc, adaptor.getInput().getType(), adaptor.getAxes(),
          adaptor.getKeepdims(), types);
    }
  }];
}

def Graph_ReduceSumOp : Graph_ReduceOp<"reduce_sum"> { let summary = "Sum over axes"; }
def Graph_ReduceMeanOp : Graph_ReduceOp<"reduce_mean"> { let summary = "Mean over axes"; }
def Graph_ReduceMaxOp : Graph_ReduceOp<"reduce_max"> { let summary = "Maximum over axes"; }

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW)
//===----------------------------------------------------------------------===//

def Graph_Conv2dOp : Graph_Op<"conv2d", [Pure, InferTypeOpAdaptor,
                                         Graph_CostOpInterface]> {
  let summary = "2-D convolution, NCHW input and OIHW filter, with groups";
  let description = [{
    `padding` is [top, left, bottom, right]. FLOPs: 2 * N * Cout * Hout *
    Wout * (Cin / groups) * KH * KW, plus one per output with a bias.

    ```mlir
    %y = graph.conv2d %x, %w strides [2, 2] padding [3, 3, 3, 3] dilations [1, 1] groups = 1 : tensor<1x3x224x224xf32>, tensor<64x3x7x7xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$filter,
                       Optional<Graph_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`bias` `(` $bias^ `:` type($bias) `)`)?
    `strides` $strides `padding` $padding `dilations` $dilations
    `groups` `=` $groups attr-dict `:` type($input) `,` type($filter)
  }];
  let extraClassDeclaration = [{ double getFlops(); }];
}

class Graph_Pool2dOp<string mnemonic>
    : Graph_Op<mnemonic, [Pure, InferTypeOpAdaptor, Graph_CostOpInterface]> {
  let arguments = (ins Graph_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding);
  let results = (outs Graph_FloatTensor:$result);
  let description = [{
    NCHW; `padding` is [top, left, bottom, right]; padded elements are
    excluded from averages. FLOPs: one per kernel element and output.
  }];
  let assemblyFormat = [{
    $input `kernel` $kernel `strides` $strides `padding` $padding attr-dict
    `:` type($input)
  }];
  let extraClassDeclaration = [{
    double getFlops() {
      return ::cleave::graph::numElements(getType()) * getKernel()[0] *
             getKernel()[1];
    }
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::cleave::graph::inferPool2dResult(
          loc, adaptor.getInput().getType(), adaptor.getKernel(),
          adaptor.getStrides(), adaptor.getPadding(), types);
    }
  }];
}

def Graph_MaxPool2dOp : Graph_Pool2dOp<"max_pool2d"> { let summary = "Max pooling"; }
def Graph_AvgPool2dOp : Graph_Pool2dOp<"avg_pool2d"> { let summary = "Average pooling"; }

def Graph_GlobalAvgPoolOp : Graph_Op<"global_avg_pool", [Pure,
    InferTypeOpAdaptor, Graph_CostOpInterface]> {
  let summary = "Mean over the spatial dimensions: [N, C, H, W] -> [N, C, 1, 1]";
  let arguments = (ins Graph_FloatTensor:$input);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let extraClassDeclaration = [{
    double getFlops() {
      return ::cleave::graph::numElements(getInput().getType());
    }
  }];
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Graph_CrossEntropyOp : Graph_Op<"cross_entropy", [Pure,
    InferTypeOpAdaptor, Graph_CostOpInterface]> {
  let summary = "Mean softmax cross-entropy of logits [N..., C] against labels [N...]";
  let description = [{
    Returns a scalar. Labels equal to `ignore_index` do not count.
    FLOPs: 5 per logit.

    ```mlir
    %loss = graph.cross_entropy %logits, %labels : tensor<4x128x50257xf32>, tensor<4x128xi64>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IndexTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs 0DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels)
  }];
  let extraClassDeclaration = [{
    double getFlops() {
      return 5 * ::cleave::graph::numElements(getLogits().getType());
    }
  }];
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Graph_MoeGateOp : Graph_Op<"moe_gate", [Pure, InferTypeOpAdaptor,
                                            Graph_CostOpInterface]> {
  let summary = "Top-k expert routing from router logits [tokens, experts]";
  let description = [{
    Softmax over experts, then the `top_k` largest probabilities and their
    expert indices (ties to the lower index). With `renormalize` the chosen
    weights are rescaled to sum to one (Mixtral); without, they stay the
    softmax probabilities (Switch). FLOPs: (5 + top_k) per logit.

    ```mlir
    %w, %i = graph.moe_gate %logits top_k = 2 renormalize : tensor<512x8xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$logits, I64Attr:$top_k,
                       UnitAttr:$renormalize);
  let results = (outs Graph_FloatTensor:$weights, Graph_IndexTensor:$indices);
  let assemblyFormat = [{
    $logits `top_k` `=` $top_k (`renormalize` $renormalize^)? attr-dict `:`
    type($logits)
  }];
  let extraClassDeclaration = [{
    double getFlops() {
      return (5 + getTopK()) * ::cleave::graph::numElements(getLogits().getType());
    }
  }];
}

def Graph_MoeDispatchOp : Graph_Op<"moe_dispatch", [Pure, InferTypeOpAdaptor,
                                                    Graph_CostOpInterface]> {
  let summary = "Scatters tokens [T, H] into expert buffers [experts, capacity, H]";
  let description = [{
    Token t's j-th choice, expert e = indices[t, j], takes the next free slot
    of e in (t, j) order; choices past `capacity` are dropped (their combine
    weight counts as zero). Slots left free are zero.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_IndexTensor:$indices,
                       I64Attr:$num_experts, I64Attr:$capacity);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $indices `experts` `=` $num_experts `capacity` `=` $capacity
    attr-dict `:` type($input) `,` type($indices)
  }];
  let extraClassDeclaration = [{ double getFlops() { return 0; } }];
}

def Graph_MoeCombineOp : Graph_Op<"moe_combine", [Pure, InferTypeOpAdaptor,
                                                  Graph_CostOpInterface]> {
  let summary = "Gathers expert outputs [experts, capacity, H] back to tokens, weighted";
  let description = [{
    result[t] = sum_j weights[t, j] * input[indices[t, j], slot(t, j)], with
    the slots `moe_dispatch` assigned. FLOPs: 2 * T * top_k * H.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$weights,
                       Graph_IndexTensor:$indices);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weights `,` $indices attr-dict `:` type($input) `,`
    type($weights) `,` type($indices)
  }];
  let extraClassDeclaration = [{
    double getFlops() {
      return 2 * ::cleave::graph::numElements(getWeights().getType()) *
             getType().getDimSize(1);
    }
  }];
}

include "cleave/Dialect/Graph/IR/GraphGradOps.td"
include "cleave/Dialect/Graph/IR/GraphCollectiveOps.td"
include "cleave/Dialect/Graph/IR/GraphCacheOps.td"

#endif // CLEAVE_DIALECT_GRAPH_IR_GRAPHOPS_TD
