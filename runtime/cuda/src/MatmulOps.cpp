//===- MatmulOps.cpp - graph.matmul through cuBLASLt ----------------------===//
//
// Operands and results as the plan stores them (fp32, or a bf16 plan's
// 16-bit activations read and written without fp32 copies). Batches whose
// operands are either fully batched or not batched at all run as one
// strided-batched call (stride 0 for the shared
// operand); a product whose rhs has no batch runs as one taller GEMM (a
// linear layer over every token). Other numpy batch broadcasts run a call
// per batch.
//
//===----------------------------------------------------------------------===//

#include "Ops.h"

#include "Gemm.h"

#include "cleave/runtime/kernels/Matmul.h"
#include "cleave/runtime/plan/PlanIO.h"

#include <cstdint>
#include <stdexcept>

namespace cleave::cuda {

namespace k = cleave::kernels;
using executor::OpContext;

namespace {

int64_t product(const k::Shape &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i)
    n *= shape[i];
  return n;
}

GemmStorage storageOf(const executor::TensorView &v) {
  switch (v.dtype) {
  case plan::F32:
    return GemmStorage::F32;
  case plan::BF16:
    return GemmStorage::Bf16;
  case plan::F16:
    return GemmStorage::F16;
  default:
    throw std::invalid_argument("matmul operands are f32, bf16 or f16, got " +
                                plan::DType_Name(v.dtype));
  }
}

/// The address `elements` elements into `v`.
const char *at(const executor::TensorView &v, int64_t elements) {
  return static_cast<const char *>(v.data) +
         elements * plan::dtypeBytes(v.dtype);
}

/// Reads and writes its operands as stored (16-bit ones go to the tensor
/// cores as they are: CudaBackend::readsHalfStorage).
void matmulKernel(OpContext &c) {
  c.expectArity(2, 1);
  const executor::TensorView &lhs = c.input(0), &rhs = c.input(1),
                             &out = c.output(0);
  GemmStorage ls = storageOf(lhs), rs = storageOf(rhs), os = storageOf(out);
  bool tl = c.attrBool("transpose_lhs"), tr = c.attrBool("transpose_rhs");
  k::Shape expected = k::matmulShape(lhs.shape, rhs.shape, tl, tr);
  if (out.shape != expected)
    throw std::invalid_argument("the result has shape " +
                                k::shapeString(out.shape) + ", expected " +
                                k::shapeString(expected));
  size_t lr = lhs.shape.size(), rr = rhs.shape.size(), orank = out.shape.size();
  int64_t m = lhs.shape[lr - (tl ? 1 : 2)], kk = lhs.shape[lr - (tl ? 2 : 1)];
  int64_t n = rhs.shape[rr - (tr ? 2 : 1)];
  int64_t batches = product(out.shape, 0, orank - 2);
  int64_t lhsBatches = product(lhs.shape, 0, lr - 2);
  int64_t rhsBatches = product(rhs.shape, 0, rr - 2);

  if (rhsBatches == 1 && !tl)
    // Every batch's rows against one matrix: one taller product.
    return gemmStored(false, tr, m * batches, n, kk, lhs.data, ls, rhs.data,
                      rs, 0.0f, out.data, os);
  bool uniform = (lhsBatches == batches || lhsBatches == 1) &&
                 (rhsBatches == batches || rhsBatches == 1);
  if (uniform)
    return gemmStored(tl, tr, m, n, kk, lhs.data, ls, rhs.data, rs, 0.0f,
                      out.data, os, batches, lhsBatches == 1 ? 0 : m * kk,
                      rhsBatches == 1 ? 0 : kk * n, m * n);
  // General numpy broadcasting of the batch dimensions: one call per
  // batch, each operand's batch index found from the output's.
  k::Shape outBatch(out.shape.begin(), out.shape.end() - 2);
  k::Shape lb(lhs.shape.begin(), lhs.shape.end() - 2),
      rb(rhs.shape.begin(), rhs.shape.end() - 2);
  std::vector<int64_t> lstr = k::rowMajorStrides(lb),
                       rstr = k::rowMajorStrides(rb);
  for (int64_t o = 0; o < batches; ++o) {
    int64_t rest = o, li = 0, ri = 0;
    for (int64_t d = static_cast<int64_t>(outBatch.size()) - 1; d >= 0; --d) {
      int64_t coord = rest % outBatch[d];
      rest /= outBatch[d];
      int64_t ld = d - static_cast<int64_t>(outBatch.size() - lb.size());
      int64_t rd = d - static_cast<int64_t>(outBatch.size() - rb.size());
      if (ld >= 0 && lb[ld] != 1)
        li += coord * lstr[ld];
      if (rd >= 0 && rb[rd] != 1)
        ri += coord * rstr[rd];
    }
    gemmStored(tl, tr, m, n, kk, at(lhs, li * m * kk), ls,
               at(rhs, ri * kk * n), rs, 0.0f,
               const_cast<char *>(at(out, o * m * n)), os);
  }
}

} // namespace

void registerMatmulOps(Registry &r) { r["graph.matmul"] = matmulKernel; }

} // namespace cleave::cuda
