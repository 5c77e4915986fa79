//===- NcclCommunicator.cpp - Collectives over NCCL on GPU buffers --------===//
//
// See NcclCommunicator.h. Ordering: an op's inputs are written by kernels
// on the compute stream, so each op first makes its NCCL stream wait for an
// event of the compute stream; its Request records an event after the op
// (and after unpacking), and wait() makes the compute stream wait for that
// event. The host never blocks, so an early-started gradient reduction
// really runs under the backward kernels that follow it.
//
// Blocks along a dimension other than the first are interleaved in memory;
// they are packed into (or unpacked from) stream-ordered staging memory
// with 2-D memcpys, one per block, as the MPI communicator does on the host.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/cuda/NcclCommunicator.h"

#include "Context.h"

#include "cleave/runtime/comm/MpiCommunicator.h"
#include "cleave/runtime/comm/Pack.h"
#include "cleave/runtime/comm/PointToPointLinks.h"

#include <mpi.h>
#include <nccl.h>

#include <map>
#include <optional>
#include <tuple>
#include <stdexcept>

namespace cleave::cuda {

using comm::Axes;
using comm::BlockLayout;
using comm::CommTensor;
using comm::MeshInfo;
using comm::Reduction;
using comm::Request;

namespace {

void checkNccl(ncclResult_t result, const char *what) {
  if (result == ncclSuccess || result == ncclInProgress)
    return;
  throw std::runtime_error(std::string(what) + ": " +
                           ncclGetErrorString(result));
}

ncclDataType_t ncclType(comm::ElementType type) {
  switch (type) {
  case comm::ElementType::F32:
    return ncclFloat32;
  case comm::ElementType::I64:
    return ncclInt64;
  case comm::ElementType::U8:
    return ncclUint8;
  case comm::ElementType::BF16:
    return ncclBfloat16;
  case comm::ElementType::F16:
    return ncclFloat16;
  }
  throw std::invalid_argument("unknown element type");
}

ncclRedOp_t ncclOp(Reduction reduction) {
  switch (reduction) {
  case Reduction::Sum:
    return ncclSum;
  case Reduction::Mean:
    return ncclAvg;
  case Reduction::Max:
    return ncclMax;
  }
  throw std::invalid_argument("unknown reduction");
}

/// Completes on the compute stream: wait() orders later kernels after the
/// operation without blocking the host.
class NcclRequest final : public Request {
public:
  explicit NcclRequest(cudaStream_t stream) {
    CLEAVE_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    CLEAVE_CUDA_CHECK(cudaEventRecord(done_, stream));
  }
  ~NcclRequest() override {
    if (!waited_) {
      try {
        wait();
      } catch (const std::exception &) {
      }
    }
    cudaEventDestroy(done_);
  }
  void wait() override {
    if (waited_)
      return;
    waited_ = true;
    CLEAVE_CUDA_CHECK(cudaStreamWaitEvent(context().compute, done_, 0));
  }

private:
  cudaEvent_t done_ = nullptr;
  bool waited_ = false;
};

/// Copies block `index` of `parts` along the layout's dimension between a
/// tensor and a contiguous buffer (toContiguous picks the direction).
void moveBlock(const BlockLayout &l, char *tensor, int64_t parts,
               int64_t index, char *contiguous, bool toContiguous,
               cudaStream_t stream) {
  size_t width = static_cast<size_t>(l.dimSize / parts * l.innerBytes);
  size_t pitch = static_cast<size_t>(l.dimSize * l.innerBytes);
  char *block = tensor + index * width;
  if (width == 0 || l.outer == 0)
    return;
  if (toContiguous)
    CLEAVE_CUDA_CHECK(cudaMemcpy2DAsync(contiguous, width, block, pitch, width,
                                        l.outer, cudaMemcpyDeviceToDevice,
                                        stream));
  else
    CLEAVE_CUDA_CHECK(cudaMemcpy2DAsync(block, pitch, contiguous, width, width,
                                        l.outer, cudaMemcpyDeviceToDevice,
                                        stream));
}

/// Stream-ordered staging memory on `stream`, freed in stream order.
class Staging {
public:
  Staging(int64_t bytes, cudaStream_t stream) : stream_(stream) {
    if (bytes > 0)
      CLEAVE_CUDA_CHECK(cudaMallocAsync(&data_, bytes, stream));
  }
  ~Staging() {
    if (data_)
      cudaFreeAsync(data_, stream_);
  }
  char *data() const { return static_cast<char *>(data_); }

private:
  void *data_ = nullptr;
  cudaStream_t stream_;
};

class NcclCommunicator final : public comm::Communicator {
public:
  NcclCommunicator(MeshInfo mesh, const std::vector<std::string> &p2pAxes)
      : mesh_(std::move(mesh)) {
    comm::requireMeshMatchesWorld(mesh_);
    int size = comm::mpiWorldSize(), rank = comm::mpiWorldRank();
    ncclUniqueId id;
    if (rank == 0)
      checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    // One rank (possibly without MPI, CLEAVE_NO_MPI): nobody to tell.
    if (size > 1 &&
        MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
      throw std::runtime_error("MPI_Bcast of the NCCL unique id failed");
    checkNccl(ncclCommInitRank(&world_, size, id, rank), "ncclCommInitRank");
    // Groups over every subset of the axes longer than 1 (a size-1 axis
    // adds nobody), split in the same order on every rank; the empty
    // subset is this rank alone.
    size_t n = mesh_.axisNames.size();
    if (n >= 16)
      throw std::invalid_argument("a mesh of more than 15 axes");
    unsigned nontrivial = 0;
    for (size_t i = 0; i < n; ++i)
      if (mesh_.axisSizes[i] > 1)
        nontrivial |= 1u << i;
    for (unsigned mask = 0; mask < (1u << n); ++mask) {
      if (mask & ~nontrivial)
        continue;
      int64_t color = 0, key = 0;
      for (size_t i = 0; i < n; ++i) {
        if (mask & (1u << i))
          key = key * mesh_.axisSizes[i] + mesh_.coords[i];
        else
          color = color * mesh_.axisSizes[i] + mesh_.coords[i];
      }
      ncclComm_t c = nullptr;
      checkNccl(ncclCommSplit(world_, static_cast<int>(color),
                              static_cast<int>(key), &c, nullptr),
                "ncclCommSplit");
      groups_[mask] = c;
    }
    // Point to point: a communicator and a stream per directed link of
    // each axis that carries messages (PointToPointLinks.h), so that no
    // message waits behind an unrelated one; per link class and direction
    // one split, the link as color (NOCOLOR: this rank ends no link of the
    // class).
    for (const std::string &axis : p2pAxes) {
      int a = mesh_.axisIndex(axis);
      if (a < 0)
        throw std::invalid_argument("point-to-point axis '" + axis +
                                    "' is not a mesh axis");
      int64_t p = mesh_.axisSizes[a], x = mesh_.coords[a];
      if (p < 2 || links_.count({a, 0, true}) || links_.count({a, 0, false}))
        continue;
      // Links of different pipelines (other coordinates) are different
      // links.
      int64_t others = 0;
      for (size_t i = 0; i < n; ++i)
        if (static_cast<int>(i) != a)
          others = others * mesh_.axisSizes[i] + mesh_.coords[i];
      for (int cls = 0; cls < comm::kLinkClasses; ++cls)
        for (bool up : {true, false}) {
          std::optional<int64_t> link = comm::linkOfClass(x, p, cls);
          int color = link ? static_cast<int>(others * p + *link)
                           : NCCL_SPLIT_NOCOLOR;
          int key = link && *link != x ? 1 : 0; // the link's upper end
          Link l;
          checkNccl(ncclCommSplit(world_, color, key, &l.comm, nullptr),
                    "ncclCommSplit");
          if (!link)
            continue;
          CLEAVE_CUDA_CHECK(
              cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking));
          links_[{a, cls, up}] = l;
        }
    }
    CLEAVE_CUDA_CHECK(
        cudaStreamCreateWithFlags(&collectives_, cudaStreamNonBlocking));
    CLEAVE_CUDA_CHECK(
        cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
  }

  ~NcclCommunicator() override {
    cudaStreamSynchronize(collectives_);
    for (auto &[key, l] : links_)
      cudaStreamSynchronize(l.stream);
    for (auto &[mask, c] : groups_)
      ncclCommDestroy(c);
    for (auto &[key, l] : links_) {
      ncclCommDestroy(l.comm);
      cudaStreamDestroy(l.stream);
    }
    ncclCommDestroy(world_);
    cudaStreamDestroy(collectives_);
    cudaEventDestroy(ready_);
  }

  const MeshInfo &mesh() const override { return mesh_; }

  std::unique_ptr<Request> allReduceAsync(const Axes &axes, CommTensor in,
                                          CommTensor out,
                                          Reduction reduction) override {
    comm::checkShape(out, in.shape, "all_reduce");
    auto [c, n] = group(axes);
    cudaStream_t s = begin(collectives_);
    checkNccl(ncclAllReduce(in.data, out.data, out.numElements(),
                            ncclType(out.type), ncclOp(reduction), c, s),
              "ncclAllReduce");
    return std::make_unique<NcclRequest>(s);
  }

  std::unique_ptr<Request> allGatherAsync(const Axes &axes, CommTensor in,
                                          CommTensor out, int dim) override {
    auto [c, n] = group(axes);
    comm::blockLayout(in, dim, 1, "all_gather");
    comm::checkShape(out, comm::scaledShape(in.shape, dim, n, 1),
                     "all_gather");
    BlockLayout layout = comm::blockLayout(out, dim, n, "all_gather");
    cudaStream_t s = begin(collectives_);
    if (layout.outer == 1) {
      checkNccl(ncclAllGather(in.data, out.data, in.numBytes(), ncclUint8, c,
                              s),
                "ncclAllGather");
    } else {
      Staging staging(out.numBytes(), s);
      checkNccl(ncclAllGather(in.data, staging.data(), in.numBytes(),
                              ncclUint8, c, s),
                "ncclAllGather");
      for (int64_t i = 0; i < n; ++i)
        moveBlock(layout, static_cast<char *>(out.data), n, i,
                  staging.data() + i * in.numBytes(), false, s);
    }
    return std::make_unique<NcclRequest>(s);
  }

  std::unique_ptr<Request> reduceScatterAsync(const Axes &axes, CommTensor in,
                                              CommTensor out, int dim,
                                              Reduction reduction) override {
    auto [c, n] = group(axes);
    BlockLayout layout = comm::blockLayout(in, dim, n, "reduce_scatter");
    comm::checkShape(out, comm::scaledShape(in.shape, dim, 1, n),
                     "reduce_scatter");
    cudaStream_t s = begin(collectives_);
    if (layout.outer == 1) {
      checkNccl(ncclReduceScatter(in.data, out.data, out.numElements(),
                                  ncclType(in.type), ncclOp(reduction), c, s),
                "ncclReduceScatter");
    } else {
      Staging staging(in.numBytes(), s);
      for (int64_t i = 0; i < n; ++i)
        moveBlock(layout, static_cast<char *>(in.data), n, i,
                  staging.data() + i * out.numBytes(), true, s);
      checkNccl(ncclReduceScatter(staging.data(), out.data, out.numElements(),
                                  ncclType(in.type), ncclOp(reduction), c, s),
                "ncclReduceScatter");
    }
    return std::make_unique<NcclRequest>(s);
  }

  std::unique_ptr<Request> allToAllAsync(const Axes &axes, CommTensor in,
                                         CommTensor out, int splitDim,
                                         int concatDim) override {
    auto [c, n] = group(axes);
    BlockLayout split = comm::blockLayout(in, splitDim, n, "all_to_all");
    std::vector<int64_t> blockShape =
        comm::scaledShape(in.shape, splitDim, 1, n);
    comm::blockLayout(in, concatDim, 1, "all_to_all");
    comm::checkShape(out, comm::scaledShape(blockShape, concatDim, n, 1),
                     "all_to_all");
    BlockLayout concat = comm::blockLayout(out, concatDim, n, "all_to_all");
    int64_t block = in.numBytes() / n;
    cudaStream_t s = begin(collectives_);
    Staging send(in.numBytes(), s), recv(in.numBytes(), s);
    for (int64_t i = 0; i < n; ++i)
      moveBlock(split, static_cast<char *>(in.data), n, i,
                send.data() + i * block, true, s);
    checkNccl(ncclGroupStart(), "ncclGroupStart");
    try {
      for (int64_t peer = 0; peer < n; ++peer) {
        checkNccl(ncclSend(send.data() + peer * block, block, ncclUint8,
                           static_cast<int>(peer), c, s),
                  "ncclSend");
        checkNccl(ncclRecv(recv.data() + peer * block, block, ncclUint8,
                           static_cast<int>(peer), c, s),
                  "ncclRecv");
      }
    } catch (...) {
      // Never leave a group open: later NCCL calls would join it.
      ncclGroupEnd();
      throw;
    }
    checkNccl(ncclGroupEnd(), "ncclGroupEnd");
    for (int64_t i = 0; i < n; ++i)
      moveBlock(concat, static_cast<char *>(out.data), n, i,
                recv.data() + i * block, false, s);
    return std::make_unique<NcclRequest>(s);
  }

  std::unique_ptr<Request> broadcastAsync(const Axes &axes, CommTensor buffer,
                                          int64_t root) override {
    auto [c, n] = group(axes);
    if (root < 0 || root >= n)
      throw std::invalid_argument("broadcast from group rank " +
                                  std::to_string(root) + " of " +
                                  std::to_string(n));
    cudaStream_t s = begin(collectives_);
    checkNccl(ncclBroadcast(buffer.data, buffer.data, buffer.numBytes(),
                            ncclUint8, static_cast<int>(root), c, s),
              "ncclBroadcast");
    return std::make_unique<NcclRequest>(s);
  }

  std::unique_ptr<Request> sendAsync(const std::string &axis, int64_t offset,
                                     int64_t tag, CommTensor in) override {
    (void)tag; // NCCL matches point-to-point messages by order, per link.
    auto [a, p, x] = axisOf(axis);
    const Link &l = link(a, comm::sendRoute(x, p, offset), axis);
    cudaStream_t s = begin(l.stream);
    checkNccl(ncclSend(in.data, in.numBytes(), ncclUint8,
                       comm::sendRoute(x, p, offset).peerEnd, l.comm, s),
              "ncclSend");
    return std::make_unique<NcclRequest>(s);
  }

  std::unique_ptr<Request> recvAsync(const std::string &axis, int64_t offset,
                                     int64_t tag, CommTensor out) override {
    (void)tag;
    auto [a, p, x] = axisOf(axis);
    const Link &l = link(a, comm::recvRoute(x, p, offset), axis);
    cudaStream_t s = begin(l.stream);
    checkNccl(ncclRecv(out.data, out.numBytes(), ncclUint8,
                       comm::recvRoute(x, p, offset).peerEnd, l.comm, s),
              "ncclRecv");
    return std::make_unique<NcclRequest>(s);
  }

  [[noreturn]] void abort(int code) override { comm::mpiAbort(code); }

private:
  struct Link {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
  };

  /// The index, size and this rank's coordinate of a mesh axis.
  std::tuple<int, int64_t, int64_t> axisOf(const std::string &axis) const {
    int a = mesh_.axisIndex(axis);
    if (a < 0)
      throw std::invalid_argument("point-to-point along '" + axis +
                                  "', which is not a mesh axis");
    return {a, mesh_.axisSizes[a], mesh_.coords[a]};
  }

  const Link &link(int axis, const comm::LinkRoute &route,
                   const std::string &name) const {
    auto it = links_.find({axis, route.linkClass, route.up});
    if (it == links_.end())
      throw std::invalid_argument(
          "no NCCL link along axis '" + name +
          "': the communicator was made without point-to-point on it");
    return it->second;
  }

  /// Orders `stream` after everything enqueued on the compute stream so
  /// far (the op's inputs), and returns it.
  cudaStream_t begin(cudaStream_t stream) {
    CLEAVE_CUDA_CHECK(cudaEventRecord(ready_, context().compute));
    CLEAVE_CUDA_CHECK(cudaStreamWaitEvent(stream, ready_, 0));
    return stream;
  }

  std::pair<ncclComm_t, int64_t> group(const Axes &axes) const {
    unsigned mask = 0;
    int64_t size = 1;
    for (const std::string &name : axes) {
      int i = mesh_.axisIndex(name);
      if (i >= 0 && mesh_.axisSizes[i] > 1 && !(mask & (1u << i))) {
        mask |= 1u << i;
        size *= mesh_.axisSizes[i];
      }
    }
    auto it = groups_.find(mask);
    if (it == groups_.end())
      throw std::invalid_argument("no NCCL communicator for these axes");
    return {it->second, size};
  }

  MeshInfo mesh_;
  ncclComm_t world_ = nullptr;
  std::map<unsigned, ncclComm_t> groups_;
  /// (axis, link class, upward) -> the link of that class this rank ends.
  std::map<std::tuple<int, int, bool>, Link> links_;
  cudaStream_t collectives_ = nullptr;
  cudaEvent_t ready_ = nullptr;
};

} // namespace

std::unique_ptr<comm::Communicator>
createNcclCommunicator(MeshInfo mesh, const std::vector<std::string> &p2pAxes) {
  return std::make_unique<NcclCommunicator>(std::move(mesh), p2pAxes);
}

} // namespace cleave::cuda
