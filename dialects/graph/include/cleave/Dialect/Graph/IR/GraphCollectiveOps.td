//===- GraphCollectiveOps.td - Communication in partitioned graphs -*- tablegen -*-===//
//
// Lifecycle: created by the SPMD partitioner (cleave-spmd-partition) where a
// producer's and a consumer's shardings differ or an op leaves partial sums,
// and by the pipeline splitter (cleave-pipeline-split) at stage boundaries;
// differentiated by the training-step builders like any other op; lowered
// one to one to the plan artifact's comm.* instructions.
//
// Every op works on the local (per-device) tensors of a group of devices:
// the devices that share their coordinates on every mesh axis except
// `axes`. `group_size` is the product of those axes' sizes; the verifiers
// check local shapes against it.
//
// The gradient rules keep one invariant: the gradient of a value that every
// device of a group holds in full (replicated) is itself the same on every
// device. So all_reduce's gradient is the identity, all_gather's is the
// device's own slice, and a replicated value that enters a computation
// that differs per device passes through `copy_to_group`, whose gradient is
// the all-reduce of the per-device contributions (Megatron-LM's f and g).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_DIALECT_GRAPH_IR_GRAPHCOLLECTIVEOPS_TD
#define CLEAVE_DIALECT_GRAPH_IR_GRAPHCOLLECTIVEOPS_TD

class Graph_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Graph_Op<mnemonic, !listconcat(traits, [Graph_CostOpInterface])> {
  let hasVerifier = 1;
  let extraClassDeclaration = [{ double getFlops() { return 0; } }];
}

def Graph_AllReduceOp : Graph_CollectiveOp<"all_reduce",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "Reduces partial values over a group; every device gets the result";
  let description = [{
    `reduction` is "sum" or "mean". Its gradient (sum) is the identity.

    ```mlir
    %y = graph.all_reduce %x axes ["tp"] size 4 reduction "sum" : tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, StrArrayAttr:$axes,
                       I64Attr:$group_size, StrAttr:$reduction);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axes` $axes `size` $group_size `reduction` $reduction attr-dict
    `:` type($input)
  }];
}

def Graph_AllGatherOp : Graph_CollectiveOp<"all_gather"> {
  let summary = "Concatenates the group's blocks along `dim`";
  let description = [{
    The result's `dim` is `group_size` times the input's. Its gradient is
    the device's own block of the result gradient, or, with
    `varying_grad` (the gathered value feeds a computation that differs
    per device, as a ZeRO-3 parameter or a sequence-parallel activation
    does), the reduce-scatter of the result gradient.

    ```mlir
    %y = graph.all_gather %x axes ["tp"] size 4 dim 1 : tensor<8x256x768xf32> -> tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, StrArrayAttr:$axes,
                       I64Attr:$group_size, I64Attr:$dim,
                       UnitAttr:$varying_grad);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $input `axes` $axes `size` $group_size `dim` $dim
    (`varying_grad` $varying_grad^)? attr-dict `:` type($input) `->`
    type($result)
  }];
}

def Graph_ReduceScatterOp : Graph_CollectiveOp<"reduce_scatter"> {
  let summary = "Sums partial values over a group; each device keeps one block along `dim`";
  let description = [{
    The result's `dim` is the input's divided by `group_size`. Its gradient
    is the all-gather of the result gradient.

    ```mlir
    %y = graph.reduce_scatter %x axes ["tp"] size 4 dim 1 : tensor<8x1024x768xf32> -> tensor<8x256x768xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, StrArrayAttr:$axes,
                       I64Attr:$group_size, I64Attr:$dim);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axes` $axes `size` $group_size `dim` $dim attr-dict `:`
    type($input) `->` type($result)
  }];
}

def Graph_AllToAllOp : Graph_CollectiveOp<"all_to_all"> {
  let summary = "Re-splits a tensor split on `concat_dim` to one split on `split_dim`";
  let description = [{
    Each device cuts its block into `group_size` pieces along `split_dim`,
    sends piece j to device j and concatenates what it receives along
    `concat_dim`. Its gradient is the all-to-all with the dimensions
    swapped.

    ```mlir
    %y = graph.all_to_all %x axes ["ep"] size 4 split 0 concat 1 : tensor<8x16x64xf32> -> tensor<2x64x64xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, StrArrayAttr:$axes,
                       I64Attr:$group_size, I64Attr:$split_dim,
                       I64Attr:$concat_dim);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $input `axes` $axes `size` $group_size `split` $split_dim `concat`
    $concat_dim attr-dict `:` type($input) `->` type($result)
  }];
}

def Graph_ShardSliceOp : Graph_CollectiveOp<"shard_slice"> {
  let summary = "A device's own block, along `dim`, of a value the group holds in full";
  let description = [{
    No communication: device i of the group keeps block i. Its gradient is
    the all-gather of the block gradients.

    With `zigzag` (zig-zag context parallelism: a causal sequence balanced
    over the group) `dim` is cut into 2n chunks and device i keeps chunks i
    and 2n - 1 - i, in that order; the gradient then puts the gathered
    chunks back in sequence order.

    ```mlir
    %y = graph.shard_slice %x axes ["tp"] size 4 dim 2 : tensor<8x1024x768xf32> -> tensor<8x1024x192xf32>
    %t = graph.shard_slice %tokens axes ["cp"] size 2 dim 1 zigzag : tensor<8x1024xi64> -> tensor<8x512xi64>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, StrArrayAttr:$axes,
                       I64Attr:$group_size, I64Attr:$dim, UnitAttr:$zigzag);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    $input `axes` $axes `size` $group_size `dim` $dim (`zigzag` $zigzag^)?
    attr-dict `:` type($input) `->` type($result)
  }];
  let extraClassDeclaration = [{
    double getFlops() { return 0; }
    /// `whole` with dimension `dim` reordered from sequence order to the
    /// zig-zag blocks of `groupSize` devices laid end to end (`toBlocks`;
    /// what an all-gather of them gives), or back: a graph.gather of
    /// constant indices.
    static ::mlir::Value reorderZigzag(::mlir::OpBuilder &b,
                                       ::mlir::Location loc,
                                       ::mlir::Value whole, int64_t dim,
                                       int64_t groupSize, bool toBlocks);
  }];
}

def Graph_CopyToGroupOp : Graph_CollectiveOp<"copy_to_group",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "Identity; marks a replicated value entering per-device work";
  let description = [{
    The forward pass copies nothing. The gradient all-reduces (sums) the
    devices' contributions, because each device's consumers used the value
    for a different part of the work (Megatron-LM's `f`, JAX's `pvary`).

    ```mlir
    %y = graph.copy_to_group %x axes ["tp"] size 4 : tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins Graph_FloatTensor:$input, StrArrayAttr:$axes,
                       I64Attr:$group_size);
  let results = (outs Graph_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axes` $axes `size` $group_size attr-dict `:` type($input)
  }];
}

def Graph_SendOp : Graph_Op<"send", [Graph_CostOpInterface]> {
  let summary = "Sends a tensor to the device `offset` steps along mesh axis `axis`";
  let description = [{
    Pipeline stages pass activations forward (offset +1) and gradients back
    (offset -1); `tag` pairs a send with its recv. Not pure: never removed.

    ```mlir
    graph.send %x axis "pp" offset 1 tag 0 : tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins Graph_Tensor:$input, StrAttr:$axis, I64Attr:$offset,
                       I64Attr:$tag);
  let assemblyFormat = [{
    $input `axis` $axis `offset` $offset `tag` $tag attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{ double getFlops() { return 0; } }];
}

def Graph_RecvOp : Graph_Op<"recv", [Graph_CostOpInterface]> {
  let summary = "Receives a tensor from the device `offset` steps along mesh axis `axis`";
  let description = [{
    ```mlir
    %x = graph.recv axis "pp" offset -1 tag 0 : tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins StrAttr:$axis, I64Attr:$offset, I64Attr:$tag);
  let results = (outs Graph_Tensor:$result);
  let assemblyFormat = [{
    `axis` $axis `offset` $offset `tag` $tag attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{ double getFlops() { return 0; } }];
}

#endif // CLEAVE_DIALECT_GRAPH_IR_GRAPHCOLLECTIVEOPS_TD
