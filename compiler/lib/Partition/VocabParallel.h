//===- VocabParallel.h - Local programs of vocabulary-split ops -*- C++ -*-===//
//
// Internal to compiler/lib/Partition: the embedding lookup from a table
// split by rows and the cross-entropy of logits split by classes (Megatron-
// LM's vocabulary-parallel embedding and cross-entropy) are not the op on
// local operands; cleave-spmd-partition expands them into graph ops and
// collectives that the runtime already has kernels and the autodiff rules
// for.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PARTITION_VOCABPARALLEL_H
#define CLEAVE_PARTITION_VOCABPARALLEL_H

#include "cleave/Dialect/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace cleave::partition {

/// The devices' shares of the group: each holds block g of n.
struct Group {
  mlir::ArrayAttr axes;
  int64_t size = 1;
};

/// `gather` of rows of `table` (this device's block of rows along axis 0)
/// at `indices`: the looked-up rows this device holds, zero where another
/// device holds them. The result is whole-shaped and partial: summed over
/// the group it is the gather of the whole table.
mlir::Value expandRowParallelGather(mlir::OpBuilder &b,
                                    graph::GatherOp gather, mlir::Value table,
                                    mlir::Value indices, const Group &group);

/// The mean cross-entropy of `logits` (this device's block of classes, the
/// last dimension) against whole `labels`: the row maximum, the sum of
/// exponentials and the target logit are each all-reduced over the group,
/// so every device gets the whole loss.
mlir::Value expandClassParallelCrossEntropy(mlir::OpBuilder &b,
                                            graph::CrossEntropyOp ce,
                                            mlir::Value logits,
                                            mlir::Value labels,
                                            const Group &group);

} // namespace cleave::partition

#endif // CLEAVE_PARTITION_VOCABPARALLEL_H
