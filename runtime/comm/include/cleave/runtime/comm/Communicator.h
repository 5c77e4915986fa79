//===- Communicator.h - Collectives over groups of mesh axes ----*- C++ -*-===//
//
// The runtime names communication partners by mesh axis, never by rank (see
// plan.proto): a group is the set of ranks that differ from this rank only
// in their coordinates on some axes ("tp", or "dp" and "cp" together). A
// Communicator implements every collective of the plan's comm.* ops on such
// groups, each as an asynchronous call returning a Request, so that one
// interface serves MPI today and NCCL later (whose calls are all
// asynchronous on a stream, like IREE's HAL channels). The blocking forms
// are the asynchronous ones followed by wait().
//
// Buffers are dense row-major tensors; "along dim d" means the group's
// blocks are stacked along dimension d (rank i holds block i), as
// torch.distributed and the graph dialect's shardings mean it.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_COMM_COMMUNICATOR_H
#define CLEAVE_RUNTIME_COMM_COMMUNICATOR_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cleave::comm {

/// BF16: bfloat16 storage (Bfloat16.h), F16: IEEE half (Float16.h); sums
/// and means of them are taken in fp32 pair by pair and rounded back.
enum class ElementType { F32, I64, U8, BF16, F16 };

/// Whether `type` is a 16-bit float storage (BF16, F16).
inline bool isHalf(ElementType type) {
  return type == ElementType::BF16 || type == ElementType::F16;
}

/// A 16-bit float storage word as fp32, and back (rounded to nearest even).
float halfToFloat(ElementType type, uint16_t word);
uint16_t floatToHalf(ElementType type, float value);

int64_t elementBytes(ElementType type);

/// A non-owning view of a dense row-major buffer.
struct CommTensor {
  void *data = nullptr;
  std::vector<int64_t> shape;
  ElementType type = ElementType::F32;

  int64_t numElements() const;
  int64_t numBytes() const { return numElements() * elementBytes(type); }
};

enum class Reduction { Sum, Mean, Max };

/// "sum", "mean" or "max"; throws std::invalid_argument otherwise.
Reduction parseReduction(const std::string &name);

/// The shape of the mesh and this rank's place in it. An axis the mesh lacks
/// counts as an axis of size 1 (a plan may name "dp" on a mesh without
/// data parallelism), so its groups hold this rank alone.
struct MeshInfo {
  std::vector<std::string> axisNames;
  std::vector<int64_t> axisSizes;
  /// This rank's coordinate per axis.
  std::vector<int64_t> coords;

  int64_t numRanks() const;
  /// Index of `name` in axisNames, -1 if the mesh has no such axis.
  int axisIndex(const std::string &name) const;
  /// The global (row-major) rank of `coords`.
  int64_t rankOf(const std::vector<int64_t> &coords) const;
  /// Ranks in the group over `axes` that holds this rank, in group order
  /// (row-major over the axes in mesh order), and this rank's index in it.
  std::vector<int64_t> groupRanks(const std::vector<std::string> &axes) const;
  int64_t groupRank(const std::vector<std::string> &axes) const;
  /// The global rank at this rank's coordinate + offset on `axis` (modulo
  /// the axis size).
  int64_t peer(const std::string &axis, int64_t offset) const;
  /// Coordinates of global rank `rank`.
  std::vector<int64_t> coordsOf(int64_t rank) const;
};

/// A started operation. wait() completes it (and unpacks any staging
/// buffer into the output); it may be called once. Destroying an unwaited
/// request waits for it, so that no buffer is freed while in flight.
class Request {
public:
  virtual ~Request() = default;
  virtual void wait() = 0;
};

using Axes = std::vector<std::string>;

/// Errors (a shape that does not split over the group, an unknown axis)
/// throw std::invalid_argument before anything is started; transport
/// failures throw std::runtime_error.
class Communicator {
public:
  virtual ~Communicator() = default;

  virtual const MeshInfo &mesh() const = 0;
  int64_t rank() const;
  int64_t groupSize(const Axes &axes) const;

  /// out = reduce over the group of in (same shapes; in may equal out).
  virtual std::unique_ptr<Request> allReduceAsync(const Axes &axes,
                                                  CommTensor in, CommTensor out,
                                                  Reduction reduction) = 0;
  /// out (dim d of size n * in's) = the group's `in` blocks along d.
  virtual std::unique_ptr<Request>
  allGatherAsync(const Axes &axes, CommTensor in, CommTensor out, int dim) = 0;
  /// out (dim d of size in's / n) = block `group rank` along d of the
  /// reduction of the group's `in`.
  virtual std::unique_ptr<Request> reduceScatterAsync(const Axes &axes,
                                                      CommTensor in,
                                                      CommTensor out, int dim,
                                                      Reduction reduction) = 0;
  /// in is split into n blocks along splitDim, block j sent to group rank
  /// j; out is the received blocks concatenated along concatDim in group
  /// rank order.
  virtual std::unique_ptr<Request> allToAllAsync(const Axes &axes,
                                                 CommTensor in, CommTensor out,
                                                 int splitDim,
                                                 int concatDim) = 0;
  /// Every rank's buffer := group rank root's.
  virtual std::unique_ptr<Request>
  broadcastAsync(const Axes &axes, CommTensor buffer, int64_t root) = 0;
  /// Point to point with the rank at this rank's coordinate + offset on
  /// `axis`; a send and a recv match by tag.
  virtual std::unique_ptr<Request> sendAsync(const std::string &axis,
                                             int64_t offset, int64_t tag,
                                             CommTensor in) = 0;
  virtual std::unique_ptr<Request> recvAsync(const std::string &axis,
                                             int64_t offset, int64_t tag,
                                             CommTensor out) = 0;

  /// Ends every rank of the job (a fault nobody can recover from).
  [[noreturn]] virtual void abort(int code) = 0;

  // Blocking forms.
  void allReduce(const Axes &axes, CommTensor in, CommTensor out,
                 Reduction reduction) {
    allReduceAsync(axes, in, out, reduction)->wait();
  }
  void allGather(const Axes &axes, CommTensor in, CommTensor out, int dim) {
    allGatherAsync(axes, in, out, dim)->wait();
  }
  void reduceScatter(const Axes &axes, CommTensor in, CommTensor out, int dim,
                     Reduction reduction) {
    reduceScatterAsync(axes, in, out, dim, reduction)->wait();
  }
  void allToAll(const Axes &axes, CommTensor in, CommTensor out, int splitDim,
                int concatDim) {
    allToAllAsync(axes, in, out, splitDim, concatDim)->wait();
  }
  void broadcast(const Axes &axes, CommTensor buffer, int64_t root) {
    broadcastAsync(axes, buffer, root)->wait();
  }
  void send(const std::string &axis, int64_t offset, int64_t tag,
            CommTensor in) {
    sendAsync(axis, offset, tag, in)->wait();
  }
  void recv(const std::string &axis, int64_t offset, int64_t tag,
            CommTensor out) {
    recvAsync(axis, offset, tag, out)->wait();
  }
};

/// The communicator of a single rank: every group has one member, so
/// collectives copy (packing as the multi-rank ones would) and a send is
/// received by the matching recv of the same rank.
std::unique_ptr<Communicator> createLocalCommunicator(MeshInfo mesh = {});

} // namespace cleave::comm

#endif // CLEAVE_RUNTIME_COMM_COMMUNICATOR_H
