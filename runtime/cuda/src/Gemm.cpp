//===- Gemm.cpp - Row-major GEMMs through cuBLASLt ------------------------===//
//
// Row-major C[M,N] = op(A)[M,K] op(B)[K,N] is column-major
// C^T[N,M] = op(B)^T op(A)^T, so cuBLASLt gets the operands swapped and
// each stored row-major buffer read as its column-major transpose (no data
// moves). Descriptors and the heuristic's algorithm are cached per problem:
// a training step repeats the same few shapes thousands of times.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include "Context.h"
#include "kernels/Convert.h"

#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

namespace cleave::cuda {

namespace {

/// One cuBLASLt problem in column-major terms: D (m x n) = opA(A) opB(B),
/// A is stored rowsA x colsA with leading dimension rowsA, etc.
struct Problem {
  bool transA, transB;
  int64_t m, n, k;
  int32_t batch;
  int64_t strideA, strideB, strideC;
  GemmPrecision precision;
  /// How D (and C) are stored.
  GemmStorage out = GemmStorage::F32;
  float beta;
  /// The largest power of two (at most 256) dividing each operand's
  /// address and batch stride in bytes: cuBLASLt's heuristic otherwise
  /// assumes 256 and may pick a kernel that faults on a group's or an
  /// image's offset.
  uint32_t alignA = 256, alignB = 256, alignC = 256;
  /// The epilogue, and the alignment of its bias and aux pointers (the
  /// heuristic reads them too).
  Epilogue epilogue = Epilogue::None;
  uint32_t alignBias = 256, alignAux = 256;

  auto key() const {
    return std::make_tuple(transA, transB, m, n, k, batch, strideA, strideB,
                           strideC, static_cast<int>(precision),
                           static_cast<int>(out), beta != 0.0f,
                           alignA, alignB, alignC,
                           static_cast<int>(epilogue), alignBias, alignAux);
  }
  bool operator<(const Problem &o) const { return key() < o.key(); }
};

/// Descriptors and algorithm of a Problem, made once.
struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  /// False when the heuristic found no algorithm (only ever with an
  /// epilogue: a plain product without one is an error).
  bool found = true;
};

cublasLtEpilogue_t ltEpilogue(Epilogue e) {
  switch (e) {
  case Epilogue::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case Epilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case Epilogue::BiasRelu:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  case Epilogue::BiasGelu:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  case Epilogue::BiasGeluAux:
    return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  case Epilogue::DGelu:
    return CUBLASLT_EPILOGUE_DGELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool usesAux(Epilogue e) {
  return e == Epilogue::BiasGeluAux || e == Epilogue::DGelu;
}

/// Sets the epilogue's pointers on the descriptor (the heuristic reads
/// their alignment; every call its values).
void setEpiloguePointers(cublasLtMatmulDesc_t op, const EpilogueArgs &e) {
  if (e.bias)
    CLEAVE_CUDA_CHECK(cublasLtMatmulDescSetAttribute(
        op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &e.bias, sizeof(e.bias)));
  if (e.aux)
    CLEAVE_CUDA_CHECK(cublasLtMatmulDescSetAttribute(
        op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &e.aux,
        sizeof(e.aux)));
}

cublasLtMatrixLayout_t layout(cudaDataType_t type, int64_t rows, int64_t cols,
                              int32_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  CLEAVE_CUDA_CHECK(cublasLtMatrixLayoutCreate(&l, type, rows, cols,
                                               rows > 0 ? rows : 1));
  if (batch > 1) {
    CLEAVE_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
    CLEAVE_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof(stride)));
  }
  return l;
}

const Plan &planFor(const Problem &p, const EpilogueArgs &e) {
  static std::map<Problem, Plan> cache;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(p);
  if (it != cache.end())
    return it->second;
  Context &ctx = context();
  Plan plan;
  // Products always accumulate in fp32 and write fp32; tf32 rounds the
  // inputs inside the tensor cores, bf16/fp16 take converted inputs.
  cublasComputeType_t compute = p.precision == GemmPrecision::Tf32
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  cudaDataType_t in = p.precision == GemmPrecision::Bf16   ? CUDA_R_16BF
                      : p.precision == GemmPrecision::Fp16 ? CUDA_R_16F
                                                           : CUDA_R_32F;
  CLEAVE_CUDA_CHECK(cublasLtMatmulDescCreate(&plan.op, compute, CUDA_R_32F));
  cublasOperation_t ta = p.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = p.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  CLEAVE_CUDA_CHECK(cublasLtMatmulDescSetAttribute(
      plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  CLEAVE_CUDA_CHECK(cublasLtMatmulDescSetAttribute(
      plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  if (p.epilogue != Epilogue::None) {
    cublasLtEpilogue_t epilogue = ltEpilogue(p.epilogue);
    CLEAVE_CUDA_CHECK(cublasLtMatmulDescSetAttribute(
        plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    if (usesAux(p.epilogue)) {
      // The aux matrix is laid out like D: column-major m x n.
      int64_t ld = p.m;
      CLEAVE_CUDA_CHECK(cublasLtMatmulDescSetAttribute(
          plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)));
    }
    setEpiloguePointers(plan.op, e);
  }
  // Stored shapes: op(A) is m x k, op(B) is k x n.
  plan.a = p.transA ? layout(in, p.k, p.m, p.batch, p.strideA)
                    : layout(in, p.m, p.k, p.batch, p.strideA);
  plan.b = p.transB ? layout(in, p.n, p.k, p.batch, p.strideB)
                    : layout(in, p.k, p.n, p.batch, p.strideB);
  plan.c = layout(p.out == GemmStorage::Bf16  ? CUDA_R_16BF
                  : p.out == GemmStorage::F16 ? CUDA_R_16F
                                              : CUDA_R_32F,
                  p.m, p.n, p.batch, p.strideC);

  cublasLtMatmulPreference_t pref = nullptr;
  CLEAVE_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  size_t workspace = ctx.ltWorkspaceBytes;
  CLEAVE_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
      sizeof(workspace)));
  for (auto [attr, value] :
       {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p.alignA},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p.alignB},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p.alignC},
        std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p.alignC}})
    CLEAVE_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value,
                                                           sizeof(value)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      ctx.lt, plan.op, plan.a, plan.b, plan.c, plan.c, pref, 1, &result,
      &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (p.epilogue != Epilogue::None &&
      (status != CUBLAS_STATUS_SUCCESS || found == 0)) {
    plan.found = false;
    return cache.emplace(p, plan).first->second;
  }
  CLEAVE_CUDA_CHECK(status);
  if (found == 0)
    throw std::runtime_error(
        "cuBLASLt has no algorithm for a " + std::to_string(p.m) + "x" +
        std::to_string(p.n) + "x" + std::to_string(p.k) + " product");
  plan.algo = result.algo;
  return cache.emplace(p, plan).first->second;
}

/// The largest power of two, at most 256, dividing the address and (for
/// a batch) the stride of `elementBytes`-byte elements.
uint32_t alignment(const void *data, int64_t stride, int32_t batch,
                   int64_t elementBytes) {
  uint64_t bits = reinterpret_cast<uintptr_t>(data) | 256u;
  if (batch > 1 && stride != 0)
    bits |= static_cast<uint64_t>(stride * elementBytes);
  return static_cast<uint32_t>(bits & (~bits + 1));
}

/// Elements an operand of `rows x cols` per batch spans.
int64_t extent(int64_t rows, int64_t cols, int32_t batch, int64_t stride) {
  return rows * cols + (batch > 1 ? (batch - 1) * stride : 0);
}

/// A GEMM's operands and result in column-major terms, as stored.
struct Operands {
  const void *a, *b;
  void *c;
  GemmStorage as = GemmStorage::F32, bs = GemmStorage::F32,
              cs = GemmStorage::F32;
};

int64_t storageBytes(GemmStorage s) { return s == GemmStorage::F32 ? 4 : 2; }

/// The precision of a product: the 16-bit type of its 16-bit operands or
/// result (they must agree), else the context's.
GemmPrecision precisionOf(const Operands &o, GemmPrecision context) {
  std::optional<GemmStorage> half;
  for (GemmStorage s : {o.as, o.bs, o.cs}) {
    if (s == GemmStorage::F32)
      continue;
    if (half && *half != s)
      throw std::invalid_argument("a GEMM mixes bf16 and fp16 storage");
    half = s;
  }
  if (!half)
    return context;
  return *half == GemmStorage::Bf16 ? GemmPrecision::Bf16
                                    : GemmPrecision::Fp16;
}

bool run(Problem p, const Operands &o, const EpilogueArgs &e = {}) {
  Context &ctx = context();
  p.precision = precisionOf(o, ctx.gemmPrecision);
  p.out = o.cs;
  p.epilogue = e.kind;
  if (p.m == 0 || p.n == 0 || p.batch == 0)
    return true;
  if (p.epilogue != Epilogue::None &&
      (p.k == 0 || p.batch != 1 || (usesAux(p.epilogue) && p.m % 8 != 0)))
    return false;
  if (p.k == 0) {
    // An empty contraction adds nothing (cuBLASLt wants k >= 1).
    if (p.beta != 0.0f)
      return true;
    int64_t cBytes = storageBytes(o.cs);
    for (int32_t i = 0; i < p.batch; ++i)
      CLEAVE_CUDA_CHECK(cudaMemsetAsync(
          static_cast<char *>(o.c) + i * p.strideC * cBytes, 0,
          cBytes * p.m * p.n, ctx.compute));
    return true;
  }
  float alpha = 1.0f, beta = p.beta;
  // bf16/fp16: fp32 operands are rounded into 16-bit copies (the weights
  // stay fp32 masters in the arena, as in mixed-precision training);
  // 16-bit operands are read as stored. Accumulation is fp32; the result
  // is stored as the plan stores it.
  const void *ain = o.a, *bin = o.b;
  std::optional<Scratch> a16, b16;
  bool half = p.precision == GemmPrecision::Bf16 ||
              p.precision == GemmPrecision::Fp16;
  if (half) {
    bool bf16 = p.precision == GemmPrecision::Bf16;
    if (o.as == GemmStorage::F32) {
      int64_t na = extent(p.m, p.k, p.batch, p.strideA);
      a16.emplace(static_cast<size_t>(na) * 2);
      convertToHalf(static_cast<const float *>(o.a), a16->data(), na, bf16,
                    ctx.compute);
      ain = a16->data();
    }
    if (o.bs == GemmStorage::F32) {
      int64_t nb = extent(p.k, p.n, p.batch, p.strideB);
      b16.emplace(static_cast<size_t>(nb) * 2);
      convertToHalf(static_cast<const float *>(o.b), b16->data(), nb, bf16,
                    ctx.compute);
      bin = b16->data();
    }
  }
  int64_t inBytes = half ? 2 : 4;
  p.alignA = alignment(ain, p.strideA, p.batch, inBytes);
  p.alignB = alignment(bin, p.strideB, p.batch, inBytes);
  p.alignC = alignment(o.c, p.strideC, p.batch, storageBytes(o.cs));
  if (e.bias)
    p.alignBias = alignment(e.bias, 0, 1, 4);
  if (e.aux)
    p.alignAux = alignment(e.aux, 0, 1, 4);
  const Plan &plan = planFor(p, e);
  if (!plan.found)
    return false;
  if (p.epilogue != Epilogue::None)
    setEpiloguePointers(plan.op, e);
  CLEAVE_CUDA_CHECK(cublasLtMatmul(ctx.lt, plan.op, &alpha, ain, plan.a, bin,
                                   plan.b, &beta, o.c, plan.c, o.c, plan.c,
                                   &plan.algo, ctx.ltWorkspace,
                                   ctx.ltWorkspaceBytes, ctx.compute));
  return true;
}

/// The column-major problem of a row-major one: C^T (n x m) = op(B)^T
/// (n x k) op(A)^T (k x m).
Problem columnMajor(bool transA, bool transB, int64_t m, int64_t n,
                    int64_t k, int64_t batch, int64_t strideA,
                    int64_t strideB, int64_t strideC, float beta) {
  if (batch > INT32_MAX)
    throw std::invalid_argument("a GEMM batch of " + std::to_string(batch));
  Problem p{};
  p.transA = transB;
  p.transB = transA;
  p.m = n;
  p.n = m;
  p.k = k;
  p.batch = static_cast<int32_t>(batch);
  p.strideA = strideB;
  p.strideB = strideA;
  p.strideC = strideC;
  p.beta = beta;
  return p;
}

} // namespace

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          const float *a, const float *b, float beta, float *c,
          int64_t batch, int64_t strideA, int64_t strideB, int64_t strideC) {
  run(columnMajor(transA, transB, m, n, k, batch, strideA, strideB, strideC,
                  beta),
      Operands{b, a, c});
}

void gemmStored(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                const void *a, GemmStorage aStorage, const void *b,
                GemmStorage bStorage, float beta, void *c,
                GemmStorage cStorage, int64_t batch, int64_t strideA,
                int64_t strideB, int64_t strideC) {
  // Column-major: the operands swap.
  run(columnMajor(transA, transB, m, n, k, batch, strideA, strideB, strideC,
                  beta),
      Operands{b, a, c, bStorage, aStorage, cStorage});
}

bool gemmEpilogue(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                  const float *a, const float *b, float *c,
                  const EpilogueArgs &epilogue) {
  // In column-major terms D is n x m: the bias over the row-major columns
  // is cuBLASLt's bias over D's rows, and the aux matrix (row-major m x n)
  // is column-major n x m with leading dimension n.
  return run(columnMajor(transA, transB, m, n, k, 1, 0, 0, 0, 0.0f),
             Operands{b, a, c}, epilogue);
}

} // namespace cleave::cuda
