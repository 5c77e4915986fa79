//===- Passes.td - Passes of the cleave compiler -----------*- tablegen -*-===//

#ifndef CLEAVE_TRANSFORMS_PASSES_TD
#define CLEAVE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TrainingStep : Pass<"cleave-training-step", "mlir::ModuleOp"> {
  let summary = "Build @train_step: forward, reverse-mode backward and optimizer update";
  let description = [{
    Clones `@forward` (whose first result must be a scalar loss) into
    `@train_step`, then walks it backwards from the loss asking each op's
    AutodiffOpInterface for the gradients of its operands, accumulating
    where a value has several uses. Only values that depend on trainable
    parameters get gradients. Finally each trainable parameter is updated
    by the chosen optimizer (`graph.sgd_update` or `graph.adamw_update`,
    with `graph.optimizer_state` for their state), and the step returns the
    loss followed by every new parameter and state value, each result
    tagged `cleave.update = "<name>"`. With `optimizer=none` it returns the
    gradients instead, tagged `cleave.grad = "<name>"` (used by the
    finite-difference tests).
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "sgd, adamw, or none (return the gradients)">,
    Option<"lr", "lr", "double", "1e-3", "learning rate">,
    Option<"momentum", "momentum", "double", "0.9", "SGD momentum">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "decoupled weight decay (AdamW) or L2 (SGD)">,
    Option<"scaledLoss", "scaled-loss", "bool", "false",
           "Multiply the loss's gradient seed by the scalar input "
           "\"loss_scale\" (loss scaling)">,
    Option<"tagPhases", "tag-phases", "bool", "false",
           "tag backward and optimizer ops with cleave.phase, as the lowering does">,
  ];
  let statistics = [
    Statistic<"numBackwardOps", "backward-ops",
              "Ops of the backward pass and optimizer">,
    Statistic<"numParams", "trained-params", "Trainable parameters updated">,
  ];
}

def AppendLoss : Pass<"cleave-append-loss", "mlir::ModuleOp"> {
  let summary = "Give an inference graph a loss: cross-entropy on one output";
  let description = [{
    Adds an input `labels` shaped like the chosen output without its last
    (class) dimension and makes `@forward` return the mean cross-entropy of
    that output against it, so an imported inference model can be trained.
  }];
  let options = [
    Option<"output", "output", "unsigned", "0",
           "index of the @forward result that holds the logits">,
  ];
}

def FuseAttention : Pass<"cleave-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Replace matmul-scale-softmax-matmul chains by graph.attention";
  let description = [{
    Finds attention written as its unfused ops, scores = q k^T (the
    matmul's transpose_rhs or an explicit transpose of the last two
    dimensions), an optional scaling by a scalar constant (multiply or
    divide, on the scores or split between q and k^T), an optional mask
    added to the scores (or a boolean one selecting -inf) that depends on no
    parameter, a softmax along the keys (causal or not), PyTorch's guard
    against fully masked rows (where(p != p, 0, p)), an optional dropout of
    ratio 0, and the product with v, and replaces it by one
    graph.attention (FlashAttention-2 at run time: the scores are never
    stored, the backward recomputes them from the saved log-sum-exp).
    Grouped-query attention written with keys broadcast over the query
    heads of a group is kept as is; keys and values repeated over the
    group (PyTorch's `expand`, exported as a product with ones) are read
    unrepeated, the queries regrouped to match. Run on forward graphs, before the
    training step is built; chains whose scores or probabilities have
    another reader, a dropout that drops, or an additive mask stay
    unfused. The rewrite is populateFuseAttentionPatterns
    (cleave/Transforms/FuseAttention.h).
  }];
  let dependentDialects = ["::cleave::graph::GraphDialect"];
  let statistics = [
    Statistic<"numFused", "fused-attentions", "Attention chains fused">,
  ];
}

def MixedPrecision : Pass<"cleave-mixed-precision", "mlir::func::FuncOp"> {
  let summary = "Store activations and their gradients in bf16 or fp16; fp32 master weights and loss";
  let description = [{
    Megatron-LM's bf16 training as types: every fp32 parameter, input and
    constant is cast to bf16 where it is read (the parameters stay the fp32
    master weights that the optimizer updates; the cast's gradient casts
    the bf16 gradient back, so weight gradients, their reduction over data
    parallelism and the optimizer state stay fp32), and every op computing
    on bf16 values produces bf16: activations, their gradients, the
    stash and the tensor-, context- and pipeline-parallel collectives that
    carry them take 2 bytes an element. The cross-entropy reads its logits
    cast to fp32 (as Megatron's vocabulary-parallel loss upcasts them), so
    the loss and what follows it stay fp32; an op that would mix bf16 and
    fp32 operands reads the bf16 ones cast up; graph.attention's
    log-sum-exp stays fp32. Results the function returns are cast back to
    their fp32 types. Kernels compute in fp32 on the 16-bit storage (the
    runtime widens and rounds around them). Run on forward graphs before
    partitioning and the training step. `storage=f16` does the same in
    IEEE half (the training step then needs loss scaling, which the
    lowering adds: fp16's 5 exponent bits flush small gradients to zero).

    ```mlir
    %w = graph.param "h.0.fc.weight" : tensor<64x256xf32>
    %w16 = graph.cast %w : tensor<64x256xf32> to tensor<64x256xbf16>
    %y = graph.matmul %x, %w16 : tensor<8x64xbf16>, tensor<64x256xbf16>
    ```
  }];
  let dependentDialects = ["::cleave::graph::GraphDialect"];
  let options = [
    Option<"storage", "storage", "std::string", /*default=*/"\"bf16\"",
           "The 16-bit storage type: bf16 or f16">,
  ];
  let statistics = [
    Statistic<"numCasts", "casts", "Casts inserted">,
    Statistic<"numNarrowed", "narrowed-values",
              "Op results stored in 16 bits">,
  ];
}

def IntraOpSearch : Pass<"cleave-intra-op-search", "mlir::func::FuncOp"> {
  let summary = "Choose every op's sharding on a device mesh of 1-3 axes (ILP)";
  let description = [{
    Alpa's intra-operator pass on a 1-D mesh of `mesh` ranks, or on a mesh
    of up to three logical axes (`mesh-shape=2x4`), of `cluster`: every op offers strategies through
    ShardingStrategyOpInterface (which dimension of each operand and result
    is split, partial sums and their reduction), and an integer program
    solved exactly by COIN-OR CBC picks one per op, minimising compute on
    each device's share plus the strategies' collectives plus the
    resharding between producers and consumers, each with its backward
    counterpart unless `training=false`, with parameter bytes per device
    under `param-memory`. The choice is written on every op as the graph
    dialect's verified sharding attribute for the SPMD lowering:

    ```
    %1 = graph.matmul %x, %w {graph.sharding = #graph.op_sharding<"matmul.n",
        operands = [X, W], results = [Y]>} : ...
    ```

    where X keeps every dimension whole and W and Y split their last over
    mesh axis 0, each written as a `#graph.tensor_sharding` body
    (GraphAttrs.td; `partial = all_reduce` marks an op that reduces partial
    sums itself).
    Runs on every function with a body, which must be one block;
    the rules and the program are in compiler/lib/Search
    (docs/intra-op-search.md); `cleave-spmd-partition` consumes the
    attributes.
  }];
  let options = [
    Option<"mesh", "mesh", "int64_t", "8", "tensor-parallel degree">,
    Option<"meshShape", "mesh-shape", "std::string", "\"\"",
           "a mesh of up to 3 logical axes, e.g. 2x4 (overrides mesh); "
           "the last axis runs over neighbouring ranks">,
    Option<"clusterSpec", "cluster", "std::string", "\"dgx-a100-80g\"",
           "cluster preset or file, with ,key=value overrides">,
    Option<"profilePath", "profile", "std::string", "\"\"",
           "a measured profile (cleave profile -o FILE) whose figures "
           "replace the cluster's formulas, as in the plan's prediction">,
    Option<"paramMemory", "param-memory", "double", "0",
           "parameter bytes per device (0: the device's memory)">,
    Option<"timeLimit", "time-limit", "double", "60",
           "CBC time limit in seconds">,
    Option<"relativeGap", "relative-gap", "double", "1e-3",
           "stop when proven within this fraction of the optimum">,
    Option<"report", "report", "bool", "false",
           "emit a remark with the ILP's size, objective, gap and solve time">,
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "normalisations run split along the sequence (Megatron's "
           "sequence parallelism)">,
    Option<"noSequenceParallel", "no-sequence-parallel", "bool", "false",
           "no value is split along the sequence (a plan with sp=off: "
           "Megatron's tensor parallelism without sequence parallelism)">,
    Option<"noBatchSplit", "no-batch-split", "bool", "false",
           "keep the batch whole: no value carrying the inputs' dimension 0 "
           "is split along it (tensor parallelism of a model, its data "
           "parallelism left to the plan's dp)">,
    Option<"contextParallel", "context-parallel", "bool", "false",
           "split tokens, not weights: parameters whole, inputs whole or split along the sequence">,
    Option<"training", "training", "bool", "true",
           "price a training step (backward pass, gradient reductions, "
           "optimizer update), not only the forward pass">,
    Option<"tieRepeatedLayers", "tie-repeated-layers", "bool", "true",
           "solve each distinct repeated layer once (the same strategy at "
           "the same place of every layer of one structure)">,
    Option<"mergeFollowers", "merge-followers", "bool", "true",
           "merge the ops that must follow their producer (views) into it">,
    Option<"lpRounding", "lp-rounding", "bool", "true",
           "solve the LP relaxation first and return its rounding when it "
           "is within relative-gap of the bound (else it starts CBC)">,
    Option<"maxNodes", "max-nodes", "int64_t", "-1",
           "branch-and-bound nodes CBC may explore (-1: no limit; 0: the "
           "rounded relaxation whatever its gap); unlike the time limit, "
           "the answer does not depend on the machine">,
  ];
  let statistics = [
    Statistic<"numOps", "ops", "Ops given a sharding">,
    Statistic<"numShardedOps", "sharded-ops", "Ops not run replicated">,
    Statistic<"numVariables", "ilp-variables", "Variables of the integer program">,
  ];
}

def SpmdPartition : Pass<"cleave-spmd-partition", "mlir::func::FuncOp"> {
  let summary = "Rewrite a sharded function into the program of one device";
  let description = [{
    Consumes the shardings cleave-intra-op-search wrote (`graph.sharding`,
    a `#graph.op_sharding` on each op) and
    rewrites the function, in place, into what each of the `size` devices
    of mesh axis `axis` runs (SPMD): every value gets its local type; where
    a consumer needs a layout its producer does not give, a collective
    reshards it (`graph.shard_slice` from replicated, `graph.all_gather` to
    replicated, `graph.all_to_all` between two splits); partial sums are
    reduced (`graph.all_reduce`, `graph.reduce_scatter`); and a replicated
    value read by per-device work passes through `graph.copy_to_group`, so
    that the training step built afterwards all-reduces its gradient.

    A parameter split over the axis becomes a parameter of the local shape
    carrying `cleave.global_shape` and `cleave.shard_axes` (per dimension,
    the mesh axis splitting it, or ""), which the plan records for
    initialisation and checkpoints. Inputs and constants stay whole on every
    device.

    With `zigzag` (context parallelism of a causal model, as Megatron-Core
    and Transformer Engine run it) a device's block of a split dimension is
    two chunks of the 2 x size it is cut into, chunk g and chunk
    2 x size - 1 - g: under a causal mask every device then computes as
    many scores as the others (contiguous blocks give the last device
    2 - 1/size times the average). Whole values stay in sequence order:
    `graph.shard_slice` takes the two chunks itself (`zigzag`), an
    all-gather is followed by a `graph.gather` of constant indices that puts
    the chunks back in order, a reduce-scatter is preceded by the inverse
    one, and the causal softmax, attention and rotary embedding of a block
    are told (`zigzag`) where its two chunks sit. Strategies that need kernels of their own (vocabulary-parallel
    embedding and cross-entropy, expert-parallel dispatch and combine) run
    replicated instead, with a remark. Ops without annotations run
    replicated.

    ```mlir
    // before (size=2)
    %y = graph.matmul %x, %w {graph.sharding = #graph.op_sharding<"matmul.n", ...>} : tensor<4x8xf32>, tensor<8x16xf32>
    // after
    %w = graph.param "w" {cleave.global_shape = array<i64: 8, 16>, cleave.shard_axes = ["", "tp"]} : tensor<8x8xf32>
    %xc = graph.copy_to_group %x axes ["tp"] size 2 : tensor<4x8xf32>
    %y = graph.matmul %xc, %w : tensor<4x8xf32>, tensor<8x8xf32>
    ```
  }];
  let options = [
    Option<"axis", "axis", "std::string", "\"tp\"", "mesh axis of the devices">,
    Option<"size", "size", "int64_t", "1", "devices along the axis">,
    Option<"zigzag", "zigzag", "bool", "false",
           "zig-zag blocks (context parallelism of a causal model): every "
           "split dimension is cut into 2 x size chunks, device g holding "
           "chunks g and 2 x size - 1 - g, so each holds as many unmasked "
           "scores as any other">,
  ];
  let statistics = [
    Statistic<"numCollectives", "collectives", "Collectives inserted">,
    Statistic<"numFallbacks", "replicated-fallbacks",
              "Sharded ops run replicated for want of a local kernel">,
  ];
}

def PipelineSplit : Pass<"cleave-pipeline-split", "mlir::ModuleOp"> {
  let summary = "Cut @forward into pipeline stages joined by send and recv";
  let description = [{
    Numbers every op of `@forward` by the layer it belongs to (the first
    integer component of its parameters' dotted names, "h.3.attn.q" is
    layer 3, carried forward to the ops computing from them), splits the
    layers into `stages` contiguous ranges as evenly as possible (the
    embedding goes with the first, the head and loss with the last) and
    writes one function per stage, `@stage0` ... Values that cross from a
    stage to the next are sent at the end of the producing stage and
    received at the start of the consuming one (`graph.send` /
    `graph.recv` on mesh axis "pp", offsets +1 / -1, one tag per value, in
    producer order on both sides so the order of messages matches).
    Parameters, inputs and constants, and ops computed only from them
    before the first layer, are repeated in every stage that reads them (a
    tied embedding is then a parameter of the first and the last stage,
    and its tensor-parallel all-gather runs in both). Each
    stage function carries `cleave.stage`, `cleave.first_layer` and
    `cleave.num_layers`; the last returns what `@forward` returns. Stage s
    holds layers [s * L / n, (s + 1) * L / n) of L, or the counts given by
    `layers-per-stage` (the cost model's split balanced against the
    embedding and head), which must be `stages` positive counts summing to
    L. With `residual-blocks` the layers are the graph's residual blocks
    instead (see `numberResidualBlocks` in LayerNumbering.h): a ResNet's
    bottleneck blocks, the stem with the first stage, the pooling, the
    classifier and the loss with the last.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "1", "pipeline stages">,
    ListOption<"layersPerStage", "layers-per-stage", "int64_t",
               "layers of each stage, in order (default: an even split)">,
    Option<"residualBlocks", "residual-blocks", "bool", "false",
           "number the layers by the graph's residual blocks (segments "
           "between single-value cuts with more than one op), not by "
           "parameter names: CNNs and graphs without numbered names">,
  ];
}

def Recompute : Pass<"cleave-recompute", "mlir::func::FuncOp"> {
  let summary = "Recompute forward activations in the backward pass instead of stashing them";
  let description = [{
    Runs on a training step whose ops carry `cleave.phase` (the forward ops
    have none; cleave-training-step's builder tags them for the lowering).
    Every forward op is numbered by its transformer layer as
    cleave-pipeline-split numbers them (the first integer component of its
    parameters' names, carried forward); ops after the last layer (the final
    norm, the head, the loss: they read a parameter with no layer number)
    are never recomputed.

    `mode=full` (Megatron's full recomputation, one layer per checkpoint)
    recomputes every op of a layer whose result the backward pass reads,
    keeping only the values another layer's forward ops read (the residual
    stream between layers); `mode=selective` (Korthikanti et al. 2022)
    recomputes only the attention core: each softmax with the score chain
    back to its matmul and the dropout after it, the values whose size grows
    with the square of the sequence. A layer's recomputed ops are cloned,
    tagged `cleave.phase = "backward"` and `cleave.recomputed`, just before
    the first backward op that reads one of them, and the backward ops read
    the clones. Collectives recompute too: every device of a group runs the
    same program, so they stay matched. Random ops repeat their draws (a
    dropout mask is a function of its seed and element index).

    With `residual-blocks` (graphs without transformer layers: ResNets,
    imported CNNs), the layers are the residual blocks that
    cleave-pipeline-split cuts such graphs at (numberResidualBlocks over the
    forward ops): `mode=full` then keeps each block's input and output and
    recomputes what lies between, the checkpointing of Chen et al. 2016
    and torch.utils.checkpoint per block.

    ```mlir
    // before: %p (softmax) is stashed for the backward pass
    %p = graph.softmax %s axis = 3 causal : tensor<2x4x16x16xf32>
    ...
    %g = graph.softmax_grad %p, %dp ... {cleave.phase = "backward"}
    // after mode=selective: recomputed next to its use
    %p2 = graph.softmax %s2 axis = 3 causal {cleave.phase = "backward", cleave.recomputed} ...
    %g = graph.softmax_grad %p2, %dp ...
    ```
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"full\"",
           "what to recompute: full (whole layers) or selective (attention cores)">,
    Option<"residualBlocks", "residual-blocks", "bool", "false",
           "layers are residual blocks read off the graph's structure, not "
           "numbered parameter names">,
  ];
  let statistics = [
    Statistic<"numRecomputed", "recomputed-ops", "Forward ops cloned into the backward pass">,
    Statistic<"numLayers", "recomputed-layers", "Layers with recomputed ops">,
  ];
}

def ExpertParallel : Pass<"cleave-expert-parallel", "mlir::func::FuncOp"> {
  let summary = "Shard the experts of every MoE layer over a mesh axis, tokens by all-to-all";
  let description = [{
    Expert parallelism as DeepSpeed-MoE and Megatron-LM build it: the
    devices of the `axis` group are data-parallel replicas (each holds its
    own tokens and runs the dense layers on them) that share the experts.
    After each `graph.moe_dispatch` ([experts, capacity, H], the replica's
    own tokens in their experts' slots) an all-to-all sends every expert's
    slots to the device owning it ([experts / n, n * capacity, H]); the
    expert weights (parameters with `experts` rows read in the region up to
    the `graph.moe_combine`) are stored as the device's block of experts
    (`cleave.shard_axes`); before the combine the inverse all-to-all brings
    each replica's slots back. The capacity stays per replica's tokens.
    The ops between are re-typed by their type inference.

    ```mlir
    %d = graph.moe_dispatch %x, %i experts = 4 capacity = 8 : ...
    %a = graph.all_to_all %d axes ["ep"] size 2 split 0 concat 1 : tensor<4x8x64xf32> -> tensor<2x16x64xf32>
    ```
  }];
  let options = [
    Option<"axis", "axis", "std::string", "\"ep\"", "mesh axis of the expert-parallel group">,
    Option<"size", "size", "int64_t", "1", "devices along the axis">,
  ];
  let statistics = [
    Statistic<"numLayers", "moe-layers", "MoE layers made expert-parallel">,
  ];
}

def KvCache : Pass<"cleave-kv-cache", "mlir::ModuleOp"> {
  let summary = "Turn a causal decoder's @forward into one generation step over a paged key/value cache";
  let description = [{
    Rewrites `@forward`, built (or imported) for T tokens a sequence (1 for
    a decode step), so that each step appends its tokens to a key/value
    cache and attends to everything before them, as autoregressive
    generation does. Every fused causal graph.attention becomes a
    graph.cache_write of its keys and of its values into two cache
    parameters (frozen state named after the attention's module,
    `layers.3.self_attn.k_cache` and `.v_cache`, each a pool `[blocks,
    block-size, kv_heads, head_dim]`) and a
    graph.paged_attention of its queries over them; every graph.rope
    rotates each token by its own position, and a learned position table
    read as a slice from position 0 (GPT) is read at the tokens' positions
    instead. The step takes four new inputs, filled by the runtime's
    scheduler: `positions` [B, T] (each token's position), `slots` [B * T]
    (where each token's key and value go; -1 for a padded one),
    `block_table` [B, max-length / block-size] and `lengths` [B] (each
    sequence's tokens, those of this step included). Attention that is not
    fused, or that is not causal, has no cache form and is refused with its
    location, as is a graph whose results need the attention's log-sum-exp.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "16",
           "positions a cache block holds">,
    Option<"maxLength", "max-length", "int64_t", "0",
           "positions a sequence may reach (prompt and output; required)">,
    Option<"blocks", "blocks", "int64_t", "0",
           "blocks in each cache pool (0: every sequence at max-length)">,
  ];
  let dependentDialects = ["::cleave::graph::GraphDialect"];
  let statistics = [
    Statistic<"numCached", "cached-attentions", "Attentions given a cache">,
  ];
}

#endif // CLEAVE_TRANSFORMS_PASSES_TD
