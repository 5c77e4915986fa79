//===- MpiCommunicator.cpp - Collectives over MPI -------------------------===//

#include "cleave/runtime/comm/MpiCommunicator.h"
#include "cleave/runtime/comm/MpiWait.h"

#include "cleave/runtime/comm/Pack.h"
#include "cleave/runtime/comm/StagingPool.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <time.h>

namespace cleave::comm {

namespace {
/// CLEAVE_NO_MPI=1: one process, no MPI runtime (MPI_Init is never called,
/// so no mpirun or orted is needed): the world is this rank alone.
bool gWithoutMpi = false;
} // namespace

void mpiInitialize(int *argc, char ***argv) {
  const char *noMpi = std::getenv("CLEAVE_NO_MPI");
  if (noMpi && std::string(noMpi) == "1") {
    gWithoutMpi = true;
    return;
  }
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  // Errors come back as codes and become exceptions naming the instruction.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

bool mpiDisabled() { return gWithoutMpi; }

int mpiWaitSleeping(int count, MPI_Request *requests) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  long pauseNs = 20000;
  for (;;) {
    int done = 0;
    int error = MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE);
    if (error != MPI_SUCCESS || done)
      return error;
    if (Clock::now() - start < std::chrono::microseconds(50))
      continue;
    struct timespec pause = {0, pauseNs};
    nanosleep(&pause, nullptr);
    pauseNs = std::min(2 * pauseNs, 200000L);
  }
}

void mpiFinalize() {
  if (!gWithoutMpi)
    MPI_Finalize();
}

int mpiWorldRank() {
  if (gWithoutMpi)
    return 0;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int mpiWorldSize() {
  if (gWithoutMpi)
    return 1;
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

std::vector<std::string> mpiGatherToRoot(const std::string &text) {
  if (gWithoutMpi)
    return {text};
  int rank = mpiWorldRank(), size = mpiWorldSize();
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(rank == 0 ? size : 0), offsets(lengths.size());
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0,
             MPI_COMM_WORLD);
  int total = 0;
  for (size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(),
              offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (size_t r = 0; r < lengths.size(); ++r)
    out.push_back(all.substr(offsets[r], lengths[r]));
  return out;
}

void requireMeshMatchesWorld(const MeshInfo &mesh) {
  int size = mpiWorldSize();
  if (mesh.numRanks() != size)
    throw std::invalid_argument("the mesh has " +
                                std::to_string(mesh.numRanks()) +
                                " ranks but MPI started " +
                                std::to_string(size));
  if (mesh.rankOf(mesh.coords) != mpiWorldRank())
    throw std::invalid_argument("this rank's mesh coordinates do not match "
                                "its MPI rank");
}

int mpiLocalRank() {
  if (gWithoutMpi)
    return 0;
  MPI_Comm node;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                          MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return mpiWorldRank();
  int rank = 0;
  MPI_Comm_rank(node, &rank);
  MPI_Comm_free(&node);
  return rank;
}

void mpiBarrier() {
  if (!gWithoutMpi)
    MPI_Barrier(MPI_COMM_WORLD);
}

void mpiBroadcast(void *data, int64_t bytes, int root) {
  if (!gWithoutMpi)
    MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD);
}

void mpiAbort(int code) {
  if (!gWithoutMpi)
    MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

namespace {

void check(int code, const char *what) {
  if (code == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string(what) + " failed: " +
                           std::string(text, length));
}

int count(int64_t n, const char *what) {
  if (n > INT_MAX)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(n) +
                                " elements exceed an MPI count");
  return static_cast<int>(n);
}

/// bf16 and fp16 travel as 16-bit words; their reductions are user-defined
/// MPI ops (below), since MPI has no 16-bit float types.
MPI_Datatype mpiType(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return MPI_FLOAT;
  case ElementType::I64:
    return MPI_INT64_T;
  case ElementType::U8:
    return MPI_UINT8_T;
  case ElementType::BF16:
  case ElementType::F16:
    return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

/// inout[i] = half(float(in[i]) + float(inout[i])): each pairwise combine
/// in fp32, rounded back, as NCCL's bf16 and fp16 reductions do.
template <ElementType T> void halfSum(void *in, void *inout, int *len,
                                      MPI_Datatype *) {
  const uint16_t *a = static_cast<const uint16_t *>(in);
  uint16_t *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = floatToHalf(T, halfToFloat(T, a[i]) + halfToFloat(T, b[i]));
}

template <ElementType T> void halfMax(void *in, void *inout, int *len,
                                      MPI_Datatype *) {
  const uint16_t *a = static_cast<const uint16_t *>(in);
  uint16_t *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = floatToHalf(T, std::fmax(halfToFloat(T, a[i]), halfToFloat(T, b[i])));
}

template <ElementType T> MPI_Op halfOp(Reduction r) {
  // Created once per type, after MPI_Init (its first reduction); MPI frees
  // user ops at MPI_Finalize.
  static MPI_Op sum = [] {
    MPI_Op op;
    check(MPI_Op_create(halfSum<T>, /*commute=*/1, &op), "MPI_Op_create");
    return op;
  }();
  static MPI_Op max = [] {
    MPI_Op op;
    check(MPI_Op_create(halfMax<T>, /*commute=*/1, &op), "MPI_Op_create");
    return op;
  }();
  return r == Reduction::Max ? max : sum;
}

MPI_Op mpiOp(Reduction r, ElementType type) {
  if (type == ElementType::BF16)
    return halfOp<ElementType::BF16>(r);
  if (type == ElementType::F16)
    return halfOp<ElementType::F16>(r);
  return r == Reduction::Max ? MPI_MAX : MPI_SUM;
}

/// Started MPI requests, the staging buffers they use, and what completes
/// the operation once they are done (unpacking, a mean's division).
class MpiRequest : public Request {
public:
  ~MpiRequest() override {
    if (!done_) {
      try {
        wait();
      } catch (...) {
      }
    }
  }
  void wait() override {
    if (done_)
      return;
    done_ = true;
    if (!requests.empty())
      check(sleepWhileWaiting
                ? mpiWaitSleeping(static_cast<int>(requests.size()),
                                  requests.data())
                : MPI_Waitall(static_cast<int>(requests.size()),
                              requests.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitall");
    if (finish)
      finish();
  }

  std::vector<MPI_Request> requests;
  /// Test and sleep instead of MPI_Waitall (mpiWaitSleeping).
  bool sleepWhileWaiting = false;
  StagingBuffer sendStage, recvStage;
  std::function<void()> finish;

private:
  bool done_ = false;
};

class MpiCommunicator : public Communicator {
public:
  explicit MpiCommunicator(MeshInfo mesh) : mesh_(std::move(mesh)) {
    requireMeshMatchesWorld(mesh_);
    // Pipeline waits (a stage idle in a bubble) sleep where the node's
    // ranks outnumber its cores, leaving the cores to the stages that
    // compute. Collectives keep MPI's polling wait: their ranks wait on
    // each other only briefly, and each of their rounds needs progress.
    // CLEAVE_P2P_WAIT=poll or =sleep overrides (for benchmarks).
    MPI_Comm node;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                              MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    int local = 1;
    MPI_Comm_size(node, &local);
    MPI_Comm_free(&node);
    unsigned cores = std::thread::hardware_concurrency();
    sleepInPointToPointWaits_ = cores > 0 && local > static_cast<int>(cores);
    if (const char *mode = std::getenv("CLEAVE_P2P_WAIT")) {
      std::string m = mode;
      if (m == "poll" || m == "sleep")
        sleepInPointToPointWaits_ = m == "sleep";
      else
        throw std::invalid_argument("CLEAVE_P2P_WAIT='" + m +
                                    "': expected poll or sleep");
    }
    // Every subset of the axes, in the same order on every rank.
    size_t n = mesh_.axisNames.size();
    for (unsigned mask = 1; n < 16 && mask < (1u << n); ++mask) {
      int64_t color = 0, key = 0;
      for (size_t i = 0; i < n; ++i) {
        if (mask & (1u << i))
          key = key * mesh_.axisSizes[i] + mesh_.coords[i];
        else
          color = color * mesh_.axisSizes[i] + mesh_.coords[i];
      }
      MPI_Comm comm;
      check(MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(color),
                           static_cast<int>(key), &comm),
            "MPI_Comm_split");
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
      comms_[mask] = comm;
    }
  }
  ~MpiCommunicator() override {
    for (auto &[mask, comm] : comms_)
      MPI_Comm_free(&comm);
  }

  const MeshInfo &mesh() const override { return mesh_; }

  std::unique_ptr<Request> allReduceAsync(const Axes &axes, CommTensor in,
                                          CommTensor out,
                                          Reduction reduction) override {
    checkShape(out, in.shape, "all_reduce");
    auto [comm, n] = group(axes);
    auto req = std::make_unique<MpiRequest>();
    req->requests.resize(1);
    const void *send = in.data == out.data ? MPI_IN_PLACE : in.data;
    check(MPI_Iallreduce(send, out.data, count(out.numElements(), "all_reduce"),
                         mpiType(out.type), mpiOp(reduction, out.type), comm,
                         &req->requests[0]),
          "MPI_Iallreduce");
    if (reduction == Reduction::Mean)
      req->finish = [out, n = n] { divideFloats(out, n); };
    return req;
  }

  std::unique_ptr<Request> allGatherAsync(const Axes &axes, CommTensor in,
                                          CommTensor out, int dim) override {
    auto [comm, n] = group(axes);
    blockLayout(in, dim, 1, "all_gather");
    checkShape(out, scaledShape(in.shape, dim, n, 1), "all_gather");
    BlockLayout layout = blockLayout(out, dim, n, "all_gather");
    auto req = std::make_unique<MpiRequest>();
    req->requests.resize(1);
    int bytes = count(in.numBytes(), "all_gather");
    if (layout.outer == 1) {
      check(MPI_Iallgather(in.data, bytes, MPI_BYTE, out.data, bytes, MPI_BYTE,
                           comm, &req->requests[0]),
            "MPI_Iallgather");
      return req;
    }
    req->recvStage = staging_->take(static_cast<size_t>(in.numBytes()) * n);
    check(MPI_Iallgather(in.data, bytes, MPI_BYTE, req->recvStage.data(),
                         bytes, MPI_BYTE, comm, &req->requests[0]),
          "MPI_Iallgather");
    MpiRequest *r = req.get();
    req->finish = [r, layout, out, n = n, bytes] {
      for (int64_t i = 0; i < n; ++i)
        unpackBlock(layout, r->recvStage.data() + i * bytes, n, i, out.data);
    };
    return req;
  }

  std::unique_ptr<Request> reduceScatterAsync(const Axes &axes, CommTensor in,
                                              CommTensor out, int dim,
                                              Reduction reduction) override {
    auto [comm, n] = group(axes);
    BlockLayout layout = blockLayout(in, dim, n, "reduce_scatter");
    checkShape(out, scaledShape(in.shape, dim, 1, n), "reduce_scatter");
    auto req = std::make_unique<MpiRequest>();
    req->requests.resize(1);
    const void *send = in.data;
    if (layout.outer > 1) {
      int64_t block = out.numBytes();
      req->sendStage = staging_->take(static_cast<size_t>(in.numBytes()));
      for (int64_t i = 0; i < n; ++i)
        packBlock(layout, in.data, n, i, req->sendStage.data() + i * block);
      send = req->sendStage.data();
    }
    check(MPI_Ireduce_scatter_block(
              send, out.data, count(out.numElements(), "reduce_scatter"),
              mpiType(out.type), mpiOp(reduction, out.type), comm, &req->requests[0]),
          "MPI_Ireduce_scatter_block");
    if (reduction == Reduction::Mean)
      req->finish = [out, n = n] { divideFloats(out, n); };
    return req;
  }

  std::unique_ptr<Request> allToAllAsync(const Axes &axes, CommTensor in,
                                         CommTensor out, int splitDim,
                                         int concatDim) override {
    auto [comm, n] = group(axes);
    BlockLayout split = blockLayout(in, splitDim, n, "all_to_all");
    std::vector<int64_t> blockShape = scaledShape(in.shape, splitDim, 1, n);
    blockLayout(in, concatDim, 1, "all_to_all");
    checkShape(out, scaledShape(blockShape, concatDim, n, 1), "all_to_all");
    BlockLayout concat = blockLayout(out, concatDim, n, "all_to_all");
    int64_t block = in.numBytes() / n;
    auto req = std::make_unique<MpiRequest>();
    req->requests.resize(1);
    // Blocks already contiguous (split or concatenated along the outermost
    // non-unit dimension) go to and from MPI in place, unless the input is
    // the output (MPI's buffers may not overlap).
    bool overlap = in.data == out.data;
    const void *send = in.data;
    if (split.outer > 1 || overlap) {
      req->sendStage = staging_->take(static_cast<size_t>(in.numBytes()));
      for (int64_t i = 0; i < n; ++i)
        packBlock(split, in.data, n, i, req->sendStage.data() + i * block);
      send = req->sendStage.data();
    }
    void *recv = out.data;
    if (concat.outer > 1) {
      req->recvStage = staging_->take(static_cast<size_t>(in.numBytes()));
      recv = req->recvStage.data();
    }
    int bytes = count(block, "all_to_all");
    check(MPI_Ialltoall(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, comm,
                        &req->requests[0]),
          "MPI_Ialltoall");
    if (concat.outer > 1) {
      MpiRequest *r = req.get();
      req->finish = [r, concat, out, n = n, block] {
        for (int64_t i = 0; i < n; ++i)
          unpackBlock(concat, r->recvStage.data() + i * block, n, i,
                      out.data);
      };
    }
    return req;
  }

  std::unique_ptr<Request> broadcastAsync(const Axes &axes, CommTensor buffer,
                                          int64_t root) override {
    auto [comm, n] = group(axes);
    if (root < 0 || root >= n)
      throw std::invalid_argument("broadcast from group rank " +
                                  std::to_string(root) + " of " +
                                  std::to_string(n));
    auto req = std::make_unique<MpiRequest>();
    req->requests.resize(1);
    check(MPI_Ibcast(buffer.data, count(buffer.numBytes(), "broadcast"),
                     MPI_BYTE, static_cast<int>(root), comm,
                     &req->requests[0]),
          "MPI_Ibcast");
    return req;
  }

  std::unique_ptr<Request> sendAsync(const std::string &axis, int64_t offset,
                                     int64_t tag, CommTensor in) override {
    auto req = std::make_unique<MpiRequest>();
    req->requests.resize(1);
    req->sleepWhileWaiting = sleepInPointToPointWaits_;
    check(MPI_Isend(in.data, count(in.numBytes(), "send"), MPI_BYTE,
                    static_cast<int>(mesh_.peer(axis, offset)),
                    static_cast<int>(tag), MPI_COMM_WORLD, &req->requests[0]),
          "MPI_Isend");
    return req;
  }

  std::unique_ptr<Request> recvAsync(const std::string &axis, int64_t offset,
                                     int64_t tag, CommTensor out) override {
    auto req = std::make_unique<MpiRequest>();
    req->requests.resize(1);
    req->sleepWhileWaiting = sleepInPointToPointWaits_;
    check(MPI_Irecv(out.data, count(out.numBytes(), "recv"), MPI_BYTE,
                    static_cast<int>(mesh_.peer(axis, offset)),
                    static_cast<int>(tag), MPI_COMM_WORLD, &req->requests[0]),
          "MPI_Irecv");
    return req;
  }

  [[noreturn]] void abort(int code) override { mpiAbort(code); }

private:
  bool sleepInPointToPointWaits_ = false;
  /// The communicator of the group over `axes` and its size.
  std::pair<MPI_Comm, int64_t> group(const Axes &axes) const {
    unsigned mask = 0;
    int64_t size = 1;
    for (const std::string &name : axes) {
      int i = mesh_.axisIndex(name);
      if (i >= 0 && !(mask & (1u << i))) {
        mask |= 1u << i;
        size *= mesh_.axisSizes[i];
      }
    }
    if (mask == 0)
      return {MPI_COMM_SELF, 1};
    auto it = comms_.find(mask);
    if (it == comms_.end())
      throw std::invalid_argument("no communicator for these axes");
    return {it->second, size};
  }

  MeshInfo mesh_;
  std::map<unsigned, MPI_Comm> comms_;
  /// Staging buffers, reused across calls (StagingPool.h).
  std::shared_ptr<StagingPool> staging_ = StagingPool::create();
};

} // namespace

std::unique_ptr<Communicator> createMpiCommunicator(MeshInfo mesh) {
  if (gWithoutMpi) {
    requireMeshMatchesWorld(mesh);
    return createLocalCommunicator(std::move(mesh));
  }
  return std::make_unique<MpiCommunicator>(std::move(mesh));
}

} // namespace cleave::comm
