//===- OpContext.h - What a kernel of the executor sees ---------*- C++ -*-===//
//
// The executor runs one instruction by looking its op name up in the kernel
// registry and calling the kernel with an OpContext: the instruction, views
// of its input and output tensors for the current microbatch (in ODS
// operand and result order; an absent optional operand has a null view),
// typed accessors for its attributes, and the communicator for comm.* ops.
// Kernels throw std::exception on any problem; the executor turns that into
// an error naming the rank, program, segment and instruction.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_EXECUTOR_OPCONTEXT_H
#define CLEAVE_RUNTIME_EXECUTOR_OPCONTEXT_H

#include "cleave/runtime/comm/Communicator.h"
#include "cleave/runtime/kernels/SequenceBlocks.h"
#include "cleave/runtime/kernels/Tensor.h"
#include "cleave/runtime/plan/plan.pb.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cleave::executor {

/// A tensor of the program as the current microbatch sees it.
struct TensorView {
  void *data = nullptr;
  kernels::Shape shape;
  plan::DType dtype = plan::F32;
  /// -1 for an absent optional operand.
  int32_t id = -1;

  int64_t numElements() const { return kernels::numElements(shape); }
  int64_t numBytes() const;
  explicit operator bool() const { return data != nullptr; }
};

/// Started comm ops of the current step, by async handle.
using PendingRequests = std::map<int32_t, std::unique_ptr<comm::Request>>;
/// Sends marked `buffered` (pipeline sends), by the address of the buffer
/// they read: started at once and completed before a later segment run
/// writes that buffer slot again, or at the end of the step, so that two
/// stages sending to each other in a 1F1B schedule do not both wait for
/// the other's receive.
using DeferredRequests =
    std::map<const void *, std::unique_ptr<comm::Request>>;

class OpContext {
public:
  OpContext(const plan::Instruction &inst, std::vector<TensorView> inputs,
            std::vector<TensorView> outputs, comm::Communicator &comm,
            PendingRequests &pending, DeferredRequests &deferred)
      : inst(inst), inputs(std::move(inputs)), outputs(std::move(outputs)),
        comm(comm), pending(pending), deferred(deferred) {}

  const plan::Instruction &inst;
  std::vector<TensorView> inputs;
  std::vector<TensorView> outputs;
  comm::Communicator &comm;
  PendingRequests &pending;
  DeferredRequests &deferred;

  // Tensor accessors: throw if the operand is missing or of the wrong type.
  kernels::ConstTensorRef in(size_t i) const;
  /// A null view when the optional operand is absent.
  kernels::ConstTensorRef inOpt(size_t i) const;
  kernels::IndexRef index(size_t i) const;
  kernels::MaskRef mask(size_t i) const;
  kernels::TensorRef out(size_t i) const;
  /// A null view (the kernel skips that result) when output i is -1 or
  /// left out: a gradient nobody reads.
  kernels::TensorRef outOpt(size_t i) const;
  kernels::MutableIndexRef outIndex(size_t i) const;
  const TensorView &input(size_t i) const;
  const TensorView &output(size_t i) const;
  /// Checks the instruction has exactly these operand counts.
  void expectArity(size_t numInputs, size_t numOutputs) const;
  /// The same for ops whose trailing operands are optional: they may be
  /// -1 or left out (between minInputs and maxInputs inputs).
  void expectArity(size_t minInputs, size_t maxInputs,
                   size_t numOutputs) const;

  // Attribute accessors: absent attributes take `fallback` (unit attributes
  // are absent when false); required ones throw when absent.
  bool has(const std::string &name) const;
  int64_t attrInt(const std::string &name) const;
  int64_t attrInt(const std::string &name, int64_t fallback) const;
  double attrFloat(const std::string &name) const;
  double attrFloat(const std::string &name, double fallback) const;
  bool attrBool(const std::string &name) const;
  std::string attrString(const std::string &name) const;
  std::string attrString(const std::string &name,
                         const std::string &fallback) const;
  std::vector<int64_t> attrInts(const std::string &name) const;
  /// An axis attribute of a rank-`rank` tensor; negative counts from the
  /// end, as in ONNX and PyTorch (the kernels take it non-negative).
  int64_t attrAxis(const std::string &name, int64_t rank) const;
  /// A string list, or a single string as a list of one.
  std::vector<std::string> attrStrings(const std::string &name) const;
  /// The causal mask's places of `queries` rows against `keys` (key j
  /// masked for query i when j > shift(i)): i + keys - queries, unless
  /// `query_blocks` says this device holds block g of n of the queries
  /// split over those mesh axes (context parallelism): then the block's
  /// rows in the whole sequence (sequenceBlock), moved by keys - n *
  /// queries.
  kernels::RowOffsets causalShift(int64_t queries, int64_t keys) const;
  /// Where this device's `rows` rows of a sequence split over the mesh axes
  /// the attribute `blocksAttr` names sit in the whole sequence: block g of
  /// n, or with `zigzag` chunks g and 2n - 1 - g of 2n.
  kernels::RowOffsets sequenceBlock(const std::string &blocksAttr,
                                    int64_t rows) const;
};

using KernelFn = void (*)(OpContext &);

/// A boolean (or unit) attribute of an instruction: false when absent;
/// throws std::invalid_argument when it is not a boolean.
bool attrBool(const plan::Instruction &inst, const std::string &name);

/// The kernel of `op` ("graph.matmul", "comm.all_reduce", "runtime.zero"),
/// null when no kernel runs it.
KernelFn findKernel(const std::string &op);
/// Every op name the registry knows, sorted.
std::vector<std::string> registeredOps();

/// A comm view of a tensor (F32, I64, BOOL, BF16 or F16).
comm::CommTensor commTensor(const TensorView &view);

/// runtime.unscale's operands, as every backend checks them: the loss
/// scale and N gradients in, the overflow flag and the same N gradients
/// (in place) out; the scale and the flag are scalars. Throws
/// std::invalid_argument naming what is wrong.
void checkUnscaleOperands(const OpContext &c);

} // namespace cleave::executor

#endif // CLEAVE_RUNTIME_EXECUTOR_OPCONTEXT_H
