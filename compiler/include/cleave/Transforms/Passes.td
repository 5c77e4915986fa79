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

#endif // CLEAVE_TRANSFORMS_PASSES_TD
