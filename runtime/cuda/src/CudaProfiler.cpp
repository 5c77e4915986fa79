//===- CudaProfiler.cpp - GEMMs, bandwidth and NCCL collectives on GPUs ---===//

#include "cleave/runtime/cuda/CudaProfiler.h"

#include "cleave/runtime/cuda/CudaBackend.h"

#include "Context.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <unistd.h>
#include <vector>

namespace cleave::cuda {

namespace {

/// Median seconds of `run` (which enqueues work on `stream`), repeated
/// until `budget` seconds have passed and at least 3 times, each repeat
/// timed by events around it.
template <typename F>
double medianSeconds(F &&run, cudaStream_t stream, double budget) {
  cudaEvent_t start, stop;
  CLEAVE_CUDA_CHECK(cudaEventCreate(&start));
  CLEAVE_CUDA_CHECK(cudaEventCreate(&stop));
  run(); // warm-up: algorithm selection, lazy loading
  CLEAVE_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> times;
  double spent = 0;
  while (times.size() < 3 || (spent < budget && times.size() < 1000)) {
    CLEAVE_CUDA_CHECK(cudaEventRecord(start, stream));
    run();
    CLEAVE_CUDA_CHECK(cudaEventRecord(stop, stream));
    CLEAVE_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CLEAVE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms * 1e-3);
    spent += ms * 1e-3;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::nth_element(times.begin(), times.begin() + times.size() / 2,
                   times.end());
  return times[times.size() / 2];
}

std::vector<int64_t> gemmDims(bool quick) {
  // Powers of 4 up to where the tensor cores reach their peak.
  if (quick)
    return {256, 1024};
  return {256, 1024, 4096, 16384};
}

struct GemmType {
  cost::DType dtype;
  cudaDataType_t data;
  cublasComputeType_t compute;
  int bytes;
};

/// One row-major (m x k)(k x n) product in `type`, timed through cuBLASLt
/// with the backend's workspace.
double timeGemm(const GemmType &type, int64_t m, int64_t n, int64_t k,
                void *a, void *b, void *c, double budget) {
  Context &ctx = context();
  cublasLtMatmulDesc_t op;
  CLEAVE_CUDA_CHECK(cublasLtMatmulDescCreate(&op, type.compute, CUDA_R_32F));
  // Column-major C^T (n x m) = B^T (n x k) A^T (k x m), no transposes.
  cublasLtMatrixLayout_t la, lb, lc;
  CLEAVE_CUDA_CHECK(cublasLtMatrixLayoutCreate(&la, type.data, n, k, n));
  CLEAVE_CUDA_CHECK(cublasLtMatrixLayoutCreate(&lb, type.data, k, m, k));
  CLEAVE_CUDA_CHECK(cublasLtMatrixLayoutCreate(&lc, type.data, n, m, n));
  cublasLtMatmulPreference_t pref;
  CLEAVE_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = ctx.ltWorkspaceBytes;
  CLEAVE_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  CLEAVE_CUDA_CHECK(cublasLtMatmulAlgoGetHeuristic(
      ctx.lt, op, la, lb, lc, lc, pref, 1, &result, &found));
  if (found == 0)
    throw std::runtime_error("cuBLASLt has no algorithm for this GEMM");
  float alpha = 1.0f, beta = 0.0f;
  double seconds = medianSeconds(
      [&] {
        CLEAVE_CUDA_CHECK(cublasLtMatmul(ctx.lt, op, &alpha, b, la, a, lb,
                                         &beta, c, lc, c, lc, &result.algo,
                                         ctx.ltWorkspace, ws, ctx.compute));
      },
      ctx.compute, budget);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
  return seconds;
}

absl::Status profileGemms(const CudaProfileOptions &options,
                          cost::Profile &profile) {
  std::vector<int64_t> dims = gemmDims(options.quick);
  int64_t largest = dims.back();
  size_t elements = static_cast<size_t>(largest * largest);
  // Buffers of the largest point in fp32; narrower types view a prefix.
  // Zeros: a GEMM's time does not depend on its values on these GPUs, and
  // zeros are valid in every type.
  void *a, *b, *c;
  CLEAVE_CUDA_CHECK(cudaMalloc(&a, elements * 4));
  CLEAVE_CUDA_CHECK(cudaMalloc(&b, elements * 4));
  CLEAVE_CUDA_CHECK(cudaMalloc(&c, elements * 4));
  CLEAVE_CUDA_CHECK(cudaMemset(a, 0, elements * 4));
  CLEAVE_CUDA_CHECK(cudaMemset(b, 0, elements * 4));
  const GemmType types[] = {
      {cost::DType::Fp32, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4},
      {cost::DType::Tf32, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4},
      {cost::DType::Bf16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2},
      {cost::DType::Fp16, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2},
  };
  absl::Status status;
  size_t total = dims.size() * dims.size() * dims.size();
  for (const GemmType &type : types) {
    std::vector<cost::GemmSample> samples;
    for (int64_t m : dims)
      for (int64_t n : dims)
        for (int64_t k : dims) {
          double seconds =
              timeGemm(type, m, n, k, a, b, c, options.secondsPerMeasurement);
          samples.push_back({m, n, k, seconds});
          if (options.progress)
            options.progress(absl::StrFormat(
                "gemm %zu/%zu: %dx%dx%d %s %.1f us (%.1f TFLOP/s)",
                samples.size(), total, m, n, k, cost::dtypeName(type.dtype),
                seconds * 1e6, 2.0 * m * n * k / seconds / 1e12));
        }
    absl::StatusOr<cost::GemmTable> table =
        cost::GemmTable::create(std::move(samples));
    if (!table.ok()) {
      status = table.status();
      break;
    }
    profile.gemm.emplace(type.dtype, *std::move(table));
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return status;
}

void profileMemory(const CudaProfileOptions &options, cost::Profile &profile) {
  Context &ctx = context();
  size_t bytes = size_t(options.quick ? 64 : 1024) << 20;
  void *src, *dst;
  CLEAVE_CUDA_CHECK(cudaMalloc(&src, bytes));
  CLEAVE_CUDA_CHECK(cudaMalloc(&dst, bytes));
  double copy = medianSeconds(
      [&] {
        CLEAVE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes,
                                          cudaMemcpyDeviceToDevice,
                                          ctx.compute));
      },
      ctx.compute, options.secondsPerMeasurement);
  // A copy reads and writes every byte.
  profile.memoryBandwidth = 2.0 * bytes / copy;
  // The smallest kernel a plan runs: how long one launch costs in a stream
  // of launches (the median of 100 back to back, per launch).
  double launches = medianSeconds(
      [&] {
        for (int i = 0; i < 100; ++i)
          CLEAVE_CUDA_CHECK(cudaMemsetAsync(dst, 0, 4, ctx.compute));
      },
      ctx.compute, options.secondsPerMeasurement);
  profile.kernelOverhead = launches / 100;
  if (options.progress)
    options.progress(absl::StrFormat(
        "memory: copy bandwidth %.0f GB/s, kernel overhead %.2f us",
        *profile.memoryBandwidth / 1e9, *profile.kernelOverhead * 1e6));
  cudaFree(src);
  cudaFree(dst);
}

std::vector<int64_t> collectiveSizes(bool quick) {
  int64_t last = quick ? int64_t(1) << 20 : int64_t(1) << 30;
  std::vector<int64_t> sizes;
  for (int64_t bytes = 1024; bytes <= last; bytes *= quick ? 32 : 4)
    sizes.push_back(bytes);
  return sizes;
}

void checkNccl(ncclResult_t r, const char *what) {
  if (r != ncclSuccess)
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}

/// NCCL curves over the first `n` GPUs, driven from this process.
absl::Status profileCollectivesOn(int n, const CudaProfileOptions &options,
                                  cost::Profile &profile) {
  std::vector<int> devices(n);
  for (int i = 0; i < n; ++i)
    devices[i] = i;
  std::vector<ncclComm_t> comms(n);
  checkNccl(ncclCommInitAll(comms.data(), n, devices.data()),
            "ncclCommInitAll");
  std::vector<int64_t> sizes = collectiveSizes(options.quick);
  int64_t largest = sizes.back();
  std::vector<cudaStream_t> streams(n);
  std::vector<void *> send(n), recv(n);
  for (int i = 0; i < n; ++i) {
    CLEAVE_CUDA_CHECK(cudaSetDevice(i));
    CLEAVE_CUDA_CHECK(cudaStreamCreate(&streams[i]));
    CLEAVE_CUDA_CHECK(cudaMalloc(&send[i], largest));
    CLEAVE_CUDA_CHECK(cudaMalloc(&recv[i], largest));
    CLEAVE_CUDA_CHECK(cudaMemset(send[i], 0, largest));
  }
  const cost::Collective kinds[] = {
      cost::Collective::AllReduce, cost::Collective::AllGather,
      cost::Collective::ReduceScatter, cost::Collective::AllToAll};
  for (cost::Collective kind : kinds) {
    std::vector<cost::CollectiveSample> samples;
    for (int64_t bytes : sizes) {
      // `bytes` is the full buffer per rank, as the MPI profiler counts.
      size_t floats = static_cast<size_t>(bytes / 4);
      size_t part = floats / n;
      auto run = [&] {
        checkNccl(ncclGroupStart(), "ncclGroupStart");
        for (int i = 0; i < n; ++i) {
          switch (kind) {
          case cost::Collective::AllReduce:
            checkNccl(ncclAllReduce(send[i], recv[i], floats, ncclFloat32,
                                    ncclSum, comms[i], streams[i]),
                      "ncclAllReduce");
            break;
          case cost::Collective::AllGather:
            checkNccl(ncclAllGather(send[i], recv[i], part, ncclFloat32,
                                    comms[i], streams[i]),
                      "ncclAllGather");
            break;
          case cost::Collective::ReduceScatter:
            checkNccl(ncclReduceScatter(send[i], recv[i], part, ncclFloat32,
                                        ncclSum, comms[i], streams[i]),
                      "ncclReduceScatter");
            break;
          default:
            for (int p = 0; p < n; ++p) {
              checkNccl(ncclSend(static_cast<float *>(send[i]) + p * part,
                                 part, ncclFloat32, p, comms[i], streams[i]),
                        "ncclSend");
              checkNccl(ncclRecv(static_cast<float *>(recv[i]) + p * part,
                                 part, ncclFloat32, p, comms[i], streams[i]),
                        "ncclRecv");
            }
          }
        }
        checkNccl(ncclGroupEnd(), "ncclGroupEnd");
      };
      // Time on GPU 0's stream after all GPUs are synchronised: the
      // collective ends together on every member.
      CLEAVE_CUDA_CHECK(cudaSetDevice(0));
      auto timed = [&] {
        run();
        for (int i = 1; i < n; ++i) {
          CLEAVE_CUDA_CHECK(cudaSetDevice(i));
          CLEAVE_CUDA_CHECK(cudaStreamSynchronize(streams[i]));
        }
        CLEAVE_CUDA_CHECK(cudaSetDevice(0));
      };
      double seconds =
          medianSeconds(timed, streams[0], options.secondsPerMeasurement);
      samples.push_back({static_cast<double>(bytes), seconds});
      if (options.progress)
        options.progress(absl::StrFormat(
            "%s over %d GPUs: %d bytes %.1f us", cost::collectiveName(kind), n,
            bytes, seconds * 1e6));
      if (kind == cost::Collective::AllReduce && bytes == largest)
        profile.intraNodeBusBandwidth =
            2.0 * (n - 1) / n * static_cast<double>(bytes) / seconds;
    }
    absl::StatusOr<cost::CollectiveCurve> curve =
        cost::CollectiveCurve::create(std::move(samples));
    if (!curve.ok())
      return curve.status();
    cost::CollectiveKey key;
    key.kind = kind;
    key.groupSize = n;
    key.ranksPerNode = n;
    profile.collectives.emplace(key, *std::move(curve));
  }
  for (int i = 0; i < n; ++i) {
    cudaSetDevice(i);
    cudaFree(send[i]);
    cudaFree(recv[i]);
    cudaStreamDestroy(streams[i]);
    ncclCommDestroy(comms[i]);
  }
  CLEAVE_CUDA_CHECK(cudaSetDevice(context().device));
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<cost::Profile> profileCuda(const CudaProfileOptions &options) {
  absl::StatusOr<int> gpus = probeCuda();
  if (!gpus.ok())
    return gpus.status();
  absl::StatusOr<std::unique_ptr<executor::Backend>> backend =
      createCudaBackend(0);
  if (!backend.ok())
    return backend.status();
  cost::Profile profile;
  try {
    if (absl::Status s = profileGemms(options, profile); !s.ok())
      return s;
    profileMemory(options, profile);
    int usable = options.maxGpus > 0 ? std::min(options.maxGpus, *gpus) : *gpus;
    if (usable < 2 && options.progress)
      options.progress("collectives: skipped, one GPU (NCCL curves need two "
                       "or more in the node)");
    for (int n = 2; n <= usable; n *= 2)
      if (absl::Status s = profileCollectivesOn(n, options, profile); !s.ok())
        return s;
  } catch (const std::exception &e) {
    return absl::InternalError(absl::StrCat("profiling the GPU: ", e.what()));
  }
  return profile;
}

std::string cudaProfileComment(const CudaProfileOptions &options) {
  char host[256] = "unknown";
  gethostname(host, sizeof(host) - 1);
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  int runtime = 0, nccl = 0, count = 0;
  cudaRuntimeGetVersion(&runtime);
  ncclGetVersion(&nccl);
  cudaGetDeviceCount(&count);
  std::string gpu = "no GPU";
  cudaDeviceProp prop{};
  if (count > 0 && cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
    gpu = prop.name;
  return absl::StrCat(
      "cleave profile --backend cuda", options.quick ? " --quick" : "",
      "\nhost ", host, ", ", date, "\n", count, " x ", gpu, ", CUDA runtime ",
      runtime / 1000, ".", (runtime % 1000) / 10, ", NCCL ", nccl,
      "\ngemm: cuBLASLt, row-major (m x k)(k x n), fp32 accumulation; tf32 is "
      "fp32 data on TF32 tensor cores",
      "\nmemory: device-to-device copy (read + write bytes); kernel overhead: "
      "one small launch in a stream of them",
      "\ncollectives: NCCL over the node's GPUs from one process, bytes per "
      "rank (the full buffer)");
}

} // namespace cleave::cuda
