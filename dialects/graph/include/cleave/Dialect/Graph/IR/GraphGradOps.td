//===- GraphGradOps.td - Backward and optimizer ops --------*- tablegen -*-===//
//
// Lifecycle: created by the training-graph pass (cleave-training-step) from
// the forward ops' AutodiffOpInterface rules; priced, partitioned and
// executed like forward ops. Where a gradient is a short expression of
// forward ops (matmul, elementwise arithmetic) the pass uses those instead,
// so only the ops below need kernels of their own.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_GRAPHGRADOPS_TD
#define CLEAVE_DIALECT_GRAPH_IR_GRAPHGRADOPS_TD

def Graph_ActivationGradOp : Graph_Op<"activation_grad", [Pure,
    AllTypesMatch<["input", "grad", "result"]>, Graph_CostOpInterface]> {
  let summary = "Gradient of an activation: dy * f'(x)";
  let description = [{
    `kind` names f: relu, gelu, gelu_tanh, silu, sigmoid, tanh, erf.
    FLOPs: 8 per element.

    ```mlir
    %dx = graph.activation_grad "gelu_tanh", %x, %dy : tensor<4x3072xf32>
    ```
  }];
  let arguments = (ins StrAttr:$kind, Graph_FloatTensor:$input,
                       Graph_FloatTensor:$grad);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$kind `,` $input `,` $grad attr-dict `:` type($input)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() { return 8 * ::cleave::graph::numElements(getType()); }
  }];
}

def Graph_SoftmaxGradOp : Graph_Op<"softmax_grad", [Pure,
    AllTypesMatch<["output", "grad", "result"]>, Graph_CostOpInterface]> {
  let summary = "Softmax backward from its output: y * (dy - sum(dy * y))";
  let description = [{
    Works from the forward output y, so masked (causal) positions, where y
    is zero, get zero gradient without knowing the mask. FLOPs: 4 per element.
  }];
  let arguments = (ins Graph_FloatTensor:$output, Graph_FloatTensor:$grad,
                       I64Attr:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $output `,` $grad `axis` `=` $axis attr-dict `:` type($output)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() { return 4 * ::cleave::graph::numElements(getType()); }
  }];
}

def Graph_AttentionGradOp : Graph_Op<"attention_grad", [Pure,
    InferTypeOpAdaptor, AllTypesMatch<["out", "grad"]>, Graph_CostOpInterface]> {
  let summary = "Fused attention backward: gradients of query, key and value";
  let description = [{
    FlashAttention-2's backward: recomputes each block's probabilities from
    the forward's log-sum-exp `lse` and `out` (for the softmax term
    rowsum(dout * out)), never storing the scores. Results are like query,
    key and value; a key or value broadcast over query heads (grouped-query
    attention) gets the sum over the heads that read it. Attributes as the
    forward's, and so is the additive `mask` (no gradient is made for
    it). FLOPs: the five block products, 10 * Sq * Sk * D
    per batch entry, and 6 per score, over the unmasked scores only.
  }];
  let arguments = (ins Graph_FloatTensor:$query, Graph_FloatTensor:$key,
                       Graph_FloatTensor:$value, Graph_FloatTensor:$out,
                       Graph_FloatTensor:$lse, Graph_FloatTensor:$grad,
                       Optional<Graph_FloatTensor>:$mask,
                       F64Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<StrArrayAttr>:$query_blocks,
                       UnitAttr:$zigzag);
  let results = (outs Graph_FloatTensor:$query_grad,
                      Graph_FloatTensor:$key_grad,
                      Graph_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $out `,` $lse `,` $grad
    (`mask` $mask^ `:` type($mask))? `scale` `=` $scale
    (`causal` $causal^)? (`query_blocks` $query_blocks^)?
    (`zigzag` $zigzag^)? attr-dict `:`
    type($query) `,` type($key) `,` type($value) `,` type($out) `,`
    type($lse)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops();
    bool usesTensorCores() { return true; }
  }];
}

def Graph_LayerNormGradOp : Graph_Op<"layer_norm_grad", [Pure,
    InferTypeOpAdaptor, AllTypesMatch<["input", "grad"]>, Graph_CostOpInterface]> {
  let summary = "Layer-norm backward: gradients of input, scale and bias";
  let description = [{
    Recomputes the statistics from `input`. Without `scale`, a scale of one
    is assumed. Results: dx (like input), dscale and dbias (like
    input.shape[axis:]). FLOPs: 12 per element.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$grad,
                       Optional<Graph_FloatTensor>:$scale, I64Attr:$axis,
                       F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$input_grad,
                      Graph_FloatTensor:$scale_grad,
                      Graph_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $grad (`scale` `(` $scale^ `:` type($scale) `)`)? `axis` `=`
    $axis `epsilon` `=` $epsilon attr-dict `:` type($input)
  }];
  let extraClassDeclaration = [{
    double getFlops() {
      return 12 * ::cleave::graph::numElements(getInput().getType());
    }
  }];
}

def Graph_RmsNormGradOp : Graph_Op<"rms_norm_grad", [Pure,
    InferTypeOpAdaptor, AllTypesMatch<["input", "grad"]>, Graph_CostOpInterface]> {
  let summary = "RMS-norm backward: gradients of input and scale";
  let description = "FLOPs: 8 per element.";
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$grad,
                       Optional<Graph_FloatTensor>:$scale, I64Attr:$axis,
                       F64Attr:$epsilon);
  let results = (outs Graph_FloatTensor:$input_grad,
                      Graph_FloatTensor:$scale_grad);
  let assemblyFormat = [{
    $input `,` $grad (`scale` `(` $scale^ `:` type($scale) `)`)? `axis` `=`
    $axis `epsilon` `=` $epsilon attr-dict `:` type($input)
  }];
  let extraClassDeclaration = [{
    double getFlops() {
      return 8 * ::cleave::graph::numElements(getInput().getType());
    }
  }];
}

def Graph_BatchNormGradOp : Graph_Op<"batch_norm_grad", [Pure,
    InferTypeOpAdaptor, AllTypesMatch<["input", "grad"]>,
    AllTypesMatch<["scale", "mean", "variance"]>, Graph_CostOpInterface]> {
  let summary = "Batch-norm backward (NCHW): gradients of input, scale, bias";
  let description = [{
    With `training`, through the batch statistics; otherwise through the
    given `mean` and `variance`. FLOPs: 12 per element.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$grad,
                       Graph_FloatTensor:$scale, Graph_FloatTensor:$mean,
                       Graph_FloatTensor:$variance, F64Attr:$epsilon,
                       UnitAttr:$training);
  let results = (outs Graph_FloatTensor:$input_grad,
                      Graph_FloatTensor:$scale_grad,
                      Graph_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $grad `,` $scale `,` $mean `,` $variance `epsilon` `=`
    $epsilon (`training` $training^)? attr-dict `:` type($input) `,`
    type($scale)
  }];
  let extraClassDeclaration = [{
    double getFlops() {
      return 12 * ::cleave::graph::numElements(getInput().getType());
    }
  }];
}

def Graph_GatherGradOp : Graph_Op<"gather_grad", [Pure,
                                                  Graph_CostOpInterface]> {
  let summary = "Gather backward: scatter-add of gradients into a zero tensor";
  let description = [{
    The result has the gathered tensor's type; rows selected several times
    accumulate. FLOPs: 1 per gradient element.

    ```mlir
    %dw = graph.gather_grad %dy[%ids] axis = 0 : tensor<4x8x32xf32>, tensor<4x8xi64> -> tensor<100x32xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$grad, Graph_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `[` $indices `]` `axis` `=` $axis attr-dict `:` type($grad) `,`
    type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() {
      return ::cleave::graph::numElements(getGrad().getType());
    }
  }];
}

def Graph_SliceGradOp : Graph_Op<"slice_grad", [Pure,
                                                Graph_CostOpInterface]> {
  let summary = "Slice backward: places the gradient in a zero tensor";
  let arguments = (ins Graph_FloatTensor:$grad, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$strides);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `starts` $starts `strides` $strides attr-dict `:` type($grad) `->`
    type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{ double getFlops() { return 0; } }];
}

def Graph_ReduceMaxGradOp : Graph_Op<"reduce_max_grad", [Pure,
    AllTypesMatch<["input", "result"]>, Graph_CostOpInterface]> {
  let summary = "reduce_max backward: the gradient goes to the first maximum";
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$grad,
                       DenseI64ArrayAttr:$axes, UnitAttr:$keepdims);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad $axes (`keepdims` $keepdims^)? attr-dict `:`
    type($input) `,` type($grad)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() {
      return ::cleave::graph::numElements(getInput().getType());
    }
  }];
}

def Graph_Conv2dInputGradOp : Graph_Op<"conv2d_input_grad", [Pure,
                                                             Graph_CostOpInterface]> {
  let summary = "Convolution backward for the input (transposed convolution)";
  let arguments = (ins Graph_FloatTensor:$grad, Graph_FloatTensor:$filter,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $filter `strides` $strides `padding` $padding `dilations`
    $dilations `groups` `=` $groups attr-dict `:` type($grad) `,`
    type($filter) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{ double getFlops(); }];
}

def Graph_Conv2dFilterGradOp : Graph_Op<"conv2d_filter_grad", [Pure,
                                                               Graph_CostOpInterface]> {
  let summary = "Convolution backward for the filter";
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$grad,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, I64Attr:$groups);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `strides` $strides `padding` $padding `dilations`
    $dilations `groups` `=` $groups attr-dict `:` type($input) `,`
    type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{ double getFlops(); }];
}

def Graph_Pool2dGradOp : Graph_Op<"pool2d_grad", [Pure,
    AllTypesMatch<["input", "result"]>, Graph_CostOpInterface]> {
  let summary = "Max or average pooling backward";
  let description = [{
    `kind` is max (gradient to the first maximum of each window) or avg
    (padding excluded, as in the forward op).
  }];
  let arguments = (ins StrAttr:$kind, Graph_FloatTensor:$input,
                       Graph_FloatTensor:$grad, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $kind `,` $input `,` $grad `kernel` $kernel `strides` $strides `padding`
    $padding attr-dict `:` type($input) `,` type($grad)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    double getFlops() {
      return ::cleave::graph::numElements(getGrad().getType()) *
             getKernel()[0] * getKernel()[1];
    }
  }];
}

def Graph_CrossEntropyGradOp : Graph_Op<"cross_entropy_grad", [Pure,
    AllTypesMatch<["logits", "result"]>, Graph_CostOpInterface]> {
  let summary = "Cross-entropy backward: (softmax(logits) - onehot) * dloss / n";
  let arguments = (ins Graph_FloatTensor:$logits, Graph_IndexTensor:$labels,
                       0DTensorOf<[AnyFloat]>:$grad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad attr-dict `:` type($logits) `,`
    type($labels) `,` type($grad)
  }];
  let extraClassDeclaration = [{
    double getFlops() {
      return 5 * ::cleave::graph::numElements(getLogits().getType());
    }
  }];
}

def Graph_MoeGateGradOp : Graph_Op<"moe_gate_grad", [Pure,
    AllTypesMatch<["logits", "result"]>, Graph_CostOpInterface]> {
  let summary = "Top-k gate backward: router-logit gradient from weight gradients";
  let arguments = (ins Graph_FloatTensor:$logits, Graph_FloatTensor:$grad,
                       I64Attr:$top_k, UnitAttr:$renormalize);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $grad `top_k` `=` $top_k (`renormalize` $renormalize^)?
    attr-dict `:` type($logits) `,` type($grad)
  }];
  let extraClassDeclaration = [{
    double getFlops() {
      return (5 + 2 * getTopK()) *
             ::cleave::graph::numElements(getLogits().getType());
    }
  }];
}

def Graph_MoeCombineGradOp : Graph_Op<"moe_combine_grad", [Pure,
    InferTypeOpAdaptor, Graph_CostOpInterface]> {
  let summary = "MoE combine backward: gradients of expert outputs and weights";
  let description = [{
    d_input[e, slot(t, j)] = weights[t, j] * grad[t] and
    d_weights[t, j] = <grad[t], input[e, slot(t, j)]>, zero for dropped
    choices. FLOPs: 4 * T * top_k * H.
  }];
  let arguments = (ins Graph_FloatTensor:$input, Graph_FloatTensor:$weights,
                       Graph_IndexTensor:$indices, Graph_FloatTensor:$grad);
  let results = (outs Graph_FloatTensor:$input_grad,
                      Graph_FloatTensor:$weights_grad);
  let assemblyFormat = [{
    $input `,` $weights `,` $indices `,` $grad attr-dict `:` type($input) `,`
    type($weights) `,` type($indices) `,` type($grad)
  }];
  let extraClassDeclaration = [{
    double getFlops() {
      return 4 * ::cleave::graph::numElements(getWeights().getType()) *
             getGrad().getType().getDimSize(1);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

def Graph_OptimizerStateOp : Graph_Op<"optimizer_state", [Pure,
                                                          Graph_CostOpInterface]> {
  let summary = "Named optimizer state of a parameter (momentum, Adam moments)";
  let description = [{
    Starts at zero; the training step returns its new value under the same
    name, so the runtime keeps it between steps and a plan can shard it
    (ZeRO) like the parameter it belongs to.

    ```mlir
    %m = graph.optimizer_state "h.0.mlp.fc.weight.exp_avg" : tensor<768x3072xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let extraClassDeclaration = [{
    double getFlops() { return 0; }
    int64_t getBytesRead() { return 0; }
  }];
}

def Graph_SgdUpdateOp : Graph_Op<"sgd_update", [Pure,
    AllTypesMatch<["param", "grad", "momentum", "new_param", "new_momentum"]>,
    Graph_CostOpInterface]> {
  let summary = "SGD with momentum: m' = mu * m + (g + wd * p); p' = p - lr * m'";
  let arguments = (ins Graph_FloatTensor:$param, Graph_FloatTensor:$grad,
                       Graph_FloatTensor:$momentum, F64Attr:$lr,
                       F64Attr:$mu, F64Attr:$weight_decay);
  let results = (outs Graph_FloatTensor:$new_param,
                      Graph_FloatTensor:$new_momentum);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum `lr` `=` $lr `momentum` `=` $mu
    `weight_decay` `=` $weight_decay attr-dict `:` type($param)
  }];
  let extraClassDeclaration = [{
    double getFlops() { return 5 * ::cleave::graph::numElements(getParam().getType()); }
  }];
}

def Graph_AdamwUpdateOp : Graph_Op<"adamw_update", [Pure,
    AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param",
                   "new_exp_avg", "new_exp_avg_sq"]>,
    Graph_CostOpInterface]> {
  let summary = "AdamW (Loshchilov and Hutter 2019) with bias correction";
  let description = [{
    m' = b1 m + (1 - b1) g; v' = b2 v + (1 - b2) g^2;
    p' = p - lr * (m' / (1 - b1^t) / (sqrt(v' / (1 - b2^t)) + eps) + wd * p),
    t being the 1-based `step` operand.
  }];
  let arguments = (ins Graph_FloatTensor:$param, Graph_FloatTensor:$grad,
                       Graph_FloatTensor:$exp_avg, Graph_FloatTensor:$exp_avg_sq,
                       0DTensorOf<[AnyFloat]>:$step, F64Attr:$lr,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay);
  let results = (outs Graph_FloatTensor:$new_param,
                      Graph_FloatTensor:$new_exp_avg,
                      Graph_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step `lr` `=` $lr
    `betas` `=` `(` $beta1 `,` $beta2 `)` `eps` `=` $eps `weight_decay` `=`
    $weight_decay attr-dict `:` type($param) `,` type($step)
  }];
  let extraClassDeclaration = [{
    double getFlops() { return 12 * ::cleave::graph::numElements(getParam().getType()); }
  }];
}

#endif // CLEAVE_DIALECT_GRAPH_IR_GRAPHGRADOPS_TD
