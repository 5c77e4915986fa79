//===- LocalCommunicator.cpp - The communicator of a single rank ----------===//
//
// Every group has one member. The collectives still check shapes and pack
// like the multi-rank ones, so that a plan run on one rank fails where it
// would fail on many.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/comm/Communicator.h"

#include "cleave/runtime/comm/Pack.h"

#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <stdexcept>

namespace cleave::comm {
namespace {

/// A request whose work runs at wait() (or at once when eager).
class DeferredRequest : public Request {
public:
  explicit DeferredRequest(std::function<void()> work)
      : work_(std::move(work)) {}
  ~DeferredRequest() override {
    if (work_) {
      try {
        work_();
      } catch (...) {
      }
    }
  }
  void wait() override {
    auto work = std::move(work_);
    work_ = nullptr;
    if (work)
      work();
  }

private:
  std::function<void()> work_;
};

class DoneRequest : public Request {
public:
  void wait() override {}
};

void copyInto(const CommTensor &in, CommTensor out, const char *what) {
  checkShape(out, in.shape, what);
  if (in.type != out.type)
    throw std::invalid_argument(std::string(what) + ": element types differ");
  if (in.data != out.data)
    std::memmove(out.data, in.data, in.numBytes());
}

class LocalCommunicator : public Communicator {
public:
  explicit LocalCommunicator(MeshInfo mesh) : mesh_(std::move(mesh)) {
    if (mesh_.numRanks() != 1)
      throw std::invalid_argument(
          "the local communicator runs a mesh of one rank, not " +
          std::to_string(mesh_.numRanks()));
    mesh_.coords.assign(mesh_.axisSizes.size(), 0);
  }

  const MeshInfo &mesh() const override { return mesh_; }

  std::unique_ptr<Request> allReduceAsync(const Axes &, CommTensor in,
                                          CommTensor out,
                                          Reduction) override {
    copyInto(in, out, "all_reduce");
    return std::make_unique<DoneRequest>();
  }
  std::unique_ptr<Request> allGatherAsync(const Axes &, CommTensor in,
                                          CommTensor out, int dim) override {
    blockLayout(in, dim, 1, "all_gather");
    copyInto(in, out, "all_gather");
    return std::make_unique<DoneRequest>();
  }
  std::unique_ptr<Request> reduceScatterAsync(const Axes &, CommTensor in,
                                              CommTensor out, int dim,
                                              Reduction) override {
    blockLayout(in, dim, 1, "reduce_scatter");
    copyInto(in, out, "reduce_scatter");
    return std::make_unique<DoneRequest>();
  }
  std::unique_ptr<Request> allToAllAsync(const Axes &, CommTensor in,
                                         CommTensor out, int splitDim,
                                         int concatDim) override {
    blockLayout(in, splitDim, 1, "all_to_all");
    blockLayout(in, concatDim, 1, "all_to_all");
    copyInto(in, out, "all_to_all");
    return std::make_unique<DoneRequest>();
  }
  std::unique_ptr<Request> broadcastAsync(const Axes &, CommTensor,
                                          int64_t root) override {
    if (root != 0)
      throw std::invalid_argument("broadcast from group rank " +
                                  std::to_string(root) + " of 1");
    return std::make_unique<DoneRequest>();
  }
  std::unique_ptr<Request> sendAsync(const std::string &, int64_t,
                                     int64_t tag, CommTensor in) override {
    const char *bytes = static_cast<const char *>(in.data);
    mailbox_[tag].emplace_back(bytes, bytes + in.numBytes());
    return std::make_unique<DoneRequest>();
  }
  std::unique_ptr<Request> recvAsync(const std::string &, int64_t,
                                     int64_t tag, CommTensor out) override {
    // The matching send may be posted after this recv starts; the message
    // is taken at wait().
    return std::make_unique<DeferredRequest>([this, tag, out] {
      auto it = mailbox_.find(tag);
      if (it == mailbox_.end() || it->second.empty())
        throw std::runtime_error("recv with tag " + std::to_string(tag) +
                                 " has no matching send on this rank");
      std::vector<char> message = std::move(it->second.front());
      it->second.pop_front();
      if (static_cast<int64_t>(message.size()) != out.numBytes())
        throw std::runtime_error("recv with tag " + std::to_string(tag) +
                                 " got " + std::to_string(message.size()) +
                                 " bytes for a buffer of " +
                                 std::to_string(out.numBytes()));
      std::memcpy(out.data, message.data(), message.size());
    });
  }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }

private:
  MeshInfo mesh_;
  std::map<int64_t, std::deque<std::vector<char>>> mailbox_;
};

} // namespace

std::unique_ptr<Communicator> createLocalCommunicator(MeshInfo mesh) {
  return std::make_unique<LocalCommunicator>(std::move(mesh));
}

} // namespace cleave::comm
