//===- MpiCollectivesCheck.cpp - Every MpiCommunicator collective ---------===//
//
// Run under mpirun with 2 or 4 ranks (CTest does both): the ranks form a
// mesh a x b (a = 2), and every collective runs on the groups over "a",
// "b" and both, blocking and asynchronous (all started before any wait),
// against values each rank computes for itself from the group's ranks.
// Exits non-zero when any check fails on any rank.
//
//===----------------------------------------------------------------------===//

#include "cleave/runtime/comm/Bfloat16.h"
#include "cleave/runtime/comm/MpiCommunicator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

using namespace cleave::comm;

namespace {

int gFailures = 0;
int gRank = 0;

void expect(bool ok, const std::string &what, double got, double expected) {
  if (ok)
    return;
  if (++gFailures <= 10)
    std::fprintf(stderr, "rank %d: FAIL %s: got %g, expected %g\n", gRank,
                 what.c_str(), got, expected);
}

void expectValues(const std::vector<float> &got,
                  const std::function<float(int64_t)> &expected,
                  const std::string &what) {
  for (size_t i = 0; i < got.size(); ++i)
    expect(got[i] == expected(static_cast<int64_t>(i)),
           what + " element " + std::to_string(i), got[i], expected(i));
}

std::string name(const Axes &axes) {
  std::string s;
  for (const std::string &a : axes)
    s += (s.empty() ? "" : ",") + a;
  return s;
}

/// Element i of the all-reduce over `ranks` of rank q's values q * 10 + i.
float reduced(const std::vector<int64_t> &ranks, Reduction r, int64_t i) {
  float sum = 0, max = -1e30f;
  for (int64_t q : ranks) {
    sum += q * 10.0f + i;
    max = std::max(max, q * 10.0f + i);
  }
  return r == Reduction::Sum    ? sum
         : r == Reduction::Mean ? sum / static_cast<float>(ranks.size())
                                : max;
}

/// One collective: started by `start`, checked by `check` after its wait.
struct Case {
  std::string what;
  std::function<std::unique_ptr<Request>()> start;
  std::function<void()> check;
};

std::vector<Case> cases(Communicator &comm, const Axes &axes,
                        std::vector<std::vector<float>> &buffers,
                        std::vector<std::vector<int64_t>> &indices,
                        std::vector<std::vector<uint16_t>> &halves) {
  const MeshInfo &mesh = comm.mesh();
  std::vector<int64_t> ranks = mesh.groupRanks(axes);
  int64_t n = static_cast<int64_t>(ranks.size());
  int64_t g = mesh.groupRank(axes);
  int64_t me = comm.rank();
  std::string tag = "[" + name(axes) + "] ";
  auto buffer = [&](int64_t size, std::function<float(int64_t)> f) {
    buffers.emplace_back(size);
    for (int64_t i = 0; i < size; ++i)
      buffers.back()[i] = f ? f(i) : -1.0f;
    return buffers.size() - 1;
  };
  std::vector<Case> result;

  for (Reduction r : {Reduction::Sum, Reduction::Mean, Reduction::Max}) {
    size_t in = buffer(6, [me](int64_t i) { return me * 10.0f + i; });
    size_t out = buffer(6, nullptr);
    const char *rn = r == Reduction::Sum ? "sum" : r == Reduction::Mean ? "mean" : "max";
    result.push_back(
        {tag + "all_reduce " + rn,
         [&, in, out, r, axes] {
           return comm.allReduceAsync(axes, {buffers[in].data(), {2, 3}},
                                      {buffers[out].data(), {2, 3}}, r);
         },
         [&, out, r, ranks, tag, rn] {
           expectValues(buffers[out],
                        [&](int64_t i) { return reduced(ranks, r, i); },
                        tag + "all_reduce " + rn);
         }});
  }
  // bf16 and fp16 (a 16-bit plan's activations): the user-defined MPI
  // reductions. Every value here is a small integer or half of one, exact
  // in both.
  for (ElementType type : {ElementType::BF16, ElementType::F16})
    for (Reduction r : {Reduction::Sum, Reduction::Mean, Reduction::Max}) {
      halves.emplace_back(6);
      for (int64_t i = 0; i < 6; ++i)
        halves.back()[i] = floatToHalf(type, me * 10.0f + i);
      size_t h = halves.size() - 1;
      const char *rn = r == Reduction::Sum    ? "sum"
                       : r == Reduction::Mean ? "mean"
                                              : "max";
      std::string name = tag + "all_reduce " +
                         (type == ElementType::BF16 ? "bf16 " : "f16 ") + rn;
      result.push_back({name,
                        [&, h, r, axes, type] {
                          CommTensor t{halves[h].data(), {2, 3}, type};
                          return comm.allReduceAsync(axes, t, t, r);
                        },
                        [&, h, r, ranks, name, type] {
                          std::vector<float> got(6);
                          for (int64_t i = 0; i < 6; ++i)
                            got[i] = halfToFloat(type, halves[h][i]);
                          expectValues(
                              got,
                              [&](int64_t i) { return reduced(ranks, r, i); },
                              name);
                        }});
    }
  {
    // Reduce-scatter of bf16 along dimension 0: block g of the sum.
    halves.emplace_back(2 * n * 3);
    for (int64_t i = 0; i < 2 * n * 3; ++i)
      halves.back()[i] = floatToBf16(me + i);
    halves.emplace_back(6);
    size_t in = halves.size() - 2, out = halves.size() - 1;
    result.push_back(
        {tag + "reduce_scatter bf16",
         [&, in, out, n, axes] {
           return comm.reduceScatterAsync(
               axes, {halves[in].data(), {2 * n, 3}, ElementType::BF16},
               {halves[out].data(), {2, 3}, ElementType::BF16}, 0,
               Reduction::Sum);
         },
         [&, out, ranks, g, tag] {
           std::vector<float> got(6);
           bf16ToFloats(halves[out].data(), got.data(), 6);
           expectValues(got,
                        [&](int64_t i) {
                          float sum = 0;
                          for (int64_t q : ranks)
                            sum += q + g * 6 + i;
                          return sum;
                        },
                        tag + "reduce_scatter bf16");
         }});
  }
  // In place, on integers.
  indices.emplace_back(std::vector<int64_t>{me, 2 * me});
  size_t idx = indices.size() - 1;
  result.push_back(
      {tag + "all_reduce i64 in place",
       [&, idx, axes] {
         CommTensor t{indices[idx].data(), {2}, ElementType::I64};
         return comm.allReduceAsync(axes, t, t, Reduction::Sum);
       },
       [&, idx, ranks, tag] {
         int64_t sum = 0;
         for (int64_t q : ranks)
           sum += q;
         expect(indices[idx][0] == sum && indices[idx][1] == 2 * sum,
                tag + "all_reduce i64", indices[idx][1], 2 * sum);
       }});

  for (int dim : {0, 1}) {
    size_t in = buffer(6, [me](int64_t i) { return me * 100.0f + i; });
    size_t out = buffer(6 * n, nullptr);
    std::vector<int64_t> outShape =
        dim == 0 ? std::vector<int64_t>{2 * n, 3} : std::vector<int64_t>{2, 3 * n};
    result.push_back(
        {tag + "all_gather dim " + std::to_string(dim),
         [&, in, out, dim, outShape, axes] {
           return comm.allGatherAsync(axes, {buffers[in].data(), {2, 3}},
                                      {buffers[out].data(), outShape}, dim);
         },
         [&, out, dim, ranks, n, tag] {
           expectValues(buffers[out],
                        [&](int64_t i) {
                          int64_t row = dim == 0 ? i / 3 : i / (3 * n);
                          int64_t col = dim == 0 ? i % 3 : i % (3 * n);
                          int64_t j = dim == 0 ? row / 2 : col / 3;
                          int64_t local = dim == 0 ? (row % 2) * 3 + col
                                                   : row * 3 + col % 3;
                          return ranks[j] * 100.0f + local;
                        },
                        tag + "all_gather dim " + std::to_string(dim));
         }});
  }

  for (int dim : {0, 1}) {
    std::vector<int64_t> inShape =
        dim == 0 ? std::vector<int64_t>{2 * n, 2} : std::vector<int64_t>{2, 2 * n};
    size_t in = buffer(4 * n, [me](int64_t i) { return me * 100.0f + i; });
    size_t out = buffer(4, nullptr);
    result.push_back(
        {tag + "reduce_scatter dim " + std::to_string(dim),
         [&, in, out, dim, inShape, axes] {
           return comm.reduceScatterAsync(axes, {buffers[in].data(), inShape},
                                          {buffers[out].data(), {2, 2}}, dim,
                                          Reduction::Sum);
         },
         [&, out, dim, ranks, n, g, tag] {
           expectValues(buffers[out],
                        [&](int64_t i) {
                          int64_t row = i / 2, col = i % 2;
                          int64_t src = dim == 0 ? (g * 2 + row) * 2 + col
                                                 : row * 2 * n + g * 2 + col;
                          float sum = 0;
                          for (int64_t q : ranks)
                            sum += q * 100.0f + src;
                          return sum;
                        },
                        tag + "reduce_scatter dim " + std::to_string(dim));
         }});
  }

  {
    // Rows split among the group, received blocks side by side.
    size_t in = buffer(6 * n, [me](int64_t i) { return me * 1000.0f + i; });
    size_t out = buffer(6 * n, nullptr);
    result.push_back(
        {tag + "all_to_all",
         [&, in, out, n, axes] {
           return comm.allToAllAsync(axes, {buffers[in].data(), {2 * n, 3}},
                                     {buffers[out].data(), {2, 3 * n}}, 0, 1);
         },
         [&, out, ranks, n, g, tag] {
           expectValues(buffers[out],
                        [&](int64_t i) {
                          int64_t row = i / (3 * n), col = i % (3 * n);
                          int64_t j = col / 3, c = col % 3;
                          return ranks[j] * 1000.0f + (2 * g + row) * 3 + c;
                        },
                        tag + "all_to_all");
         }});
  }

  // Every pairing of split and concatenated dimension, each of which the
  // communicator sends or receives in place or through a staging buffer,
  // and the input as its own output (staged: MPI's buffers may not
  // overlap).
  for (auto [split, concat, inPlace] :
       {std::tuple{0, 0, false}, std::tuple{1, 0, false},
        std::tuple{1, 1, false}, std::tuple{0, 0, true}}) {
    int64_t side = 2 * n;
    size_t in = buffer(side * side,
                       [me](int64_t i) { return me * 10000.0f + i; });
    size_t out = inPlace ? in : buffer(side * side, nullptr);
    std::vector<int64_t> block = {split == 0 ? 2 : side, split == 1 ? 2 : side};
    std::vector<int64_t> outShape = block;
    outShape[concat] *= n;
    std::string name = tag + "all_to_all split " + std::to_string(split) +
                       " concat " + std::to_string(concat) +
                       (inPlace ? " in place" : "");
    result.push_back(
        {name,
         [&, in, out, side, outShape, split, concat, axes] {
           return comm.allToAllAsync(axes, {buffers[in].data(), {side, side}},
                                     {buffers[out].data(), outShape}, split,
                                     concat);
         },
         [&, out, ranks, g, side, block, outShape, split, concat, name] {
           expectValues(buffers[out],
                        [&](int64_t i) {
                          int64_t row = i / outShape[1], col = i % outShape[1];
                          int64_t j = concat == 0 ? row / block[0]
                                                  : col / block[1];
                          int64_t r = concat == 0 ? row % block[0] : row;
                          int64_t c = concat == 1 ? col % block[1] : col;
                          int64_t srcRow = split == 0 ? 2 * g + r : r;
                          int64_t srcCol = split == 1 ? 2 * g + c : c;
                          return ranks[j] * 10000.0f + srcRow * side + srcCol;
                        },
                        name);
         }});
  }

  {
    int64_t root = n - 1;
    size_t buf = buffer(4, [me](int64_t i) { return me * 7.0f + i; });
    result.push_back({tag + "broadcast",
                      [&, buf, root, axes] {
                        return comm.broadcastAsync(
                            axes, {buffers[buf].data(), {4}}, root);
                      },
                      [&, buf, ranks, root, tag] {
                        expectValues(
                            buffers[buf],
                            [&](int64_t i) { return ranks[root] * 7.0f + i; },
                            tag + "broadcast");
                      }});
  }
  return result;
}

} // namespace

int main(int argc, char **argv) {
  mpiInitialize(&argc, &argv);
  int size = mpiWorldSize();
  gRank = mpiWorldRank();
  if (size % 2 != 0) {
    std::fprintf(stderr, "run with an even number of ranks\n");
    mpiFinalize();
    return 2;
  }
  MeshInfo mesh{{"a", "b"}, {2, size / 2}, {gRank / (size / 2), gRank % (size / 2)}};
  std::unique_ptr<Communicator> comm = createMpiCommunicator(mesh);

  for (const Axes &axes : {Axes{"a"}, Axes{"b"}, Axes{"a", "b"}, Axes{}}) {
    // Blocking, one at a time.
    {
      std::vector<std::vector<float>> buffers;
      std::vector<std::vector<int64_t>> indices;
      std::vector<std::vector<uint16_t>> halves;
      buffers.reserve(64);
      for (Case &c : cases(*comm, axes, buffers, indices, halves)) {
        c.start()->wait();
        c.check();
      }
    }
    // Asynchronous: everything started, then waited in reverse.
    {
      std::vector<std::vector<float>> buffers;
      std::vector<std::vector<int64_t>> indices;
      std::vector<std::vector<uint16_t>> halves;
      buffers.reserve(64);
      std::vector<Case> all = cases(*comm, axes, buffers, indices, halves);
      std::vector<std::unique_ptr<Request>> started;
      for (Case &c : all)
        started.push_back(c.start());
      for (size_t i = started.size(); i-- > 0;)
        started[i]->wait();
      for (Case &c : all)
        c.check();
    }
  }

  // Point to point around the ring of axis "b" and across "a".
  for (const char *axis : {"a", "b"}) {
    float out = -1, in = static_cast<float>(gRank);
    auto recv = comm->recvAsync(axis, -1, 3, {&out, {1}});
    auto send = comm->sendAsync(axis, 1, 3, {&in, {1}});
    send->wait();
    recv->wait();
    expect(out == static_cast<float>(mesh.peer(axis, -1)),
           std::string("recv along ") + axis, out, mesh.peer(axis, -1));
  }

  // Pipeline waits that sleep between tests (where ranks outnumber cores,
  // or as CLEAVE_P2P_WAIT=sleep asks): a late sender, and a message large
  // enough for Open MPI's rendezvous, still arrive whole.
  setenv("CLEAVE_P2P_WAIT", "sleep", 1);
  {
    std::unique_ptr<Communicator> sleeping = createMpiCommunicator(mesh);
    std::vector<float> in(1 << 18, static_cast<float>(gRank)), out(1 << 18, -1);
    int64_t n = static_cast<int64_t>(in.size());
    auto recv = sleeping->recvAsync("b", -1, 4, {out.data(), {n}});
    if (gRank % 2 == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    auto send = sleeping->sendAsync("b", 1, 4, {in.data(), {n}});
    recv->wait();
    send->wait();
    float from = static_cast<float>(mesh.peer("b", -1));
    expect(out.front() == from && out.back() == from,
           "recv of 1 MiB with sleeping waits", out.back(), from);
  }
  setenv("CLEAVE_P2P_WAIT", "spin", 1);
  try {
    createMpiCommunicator(mesh);
    expect(false, "CLEAVE_P2P_WAIT=spin did not throw", 0, 1);
  } catch (const std::invalid_argument &e) {
    expect(std::string(e.what()).find("expected poll or sleep") !=
               std::string::npos,
           "CLEAVE_P2P_WAIT=spin names the choices", 0, 1);
  }
  unsetenv("CLEAVE_P2P_WAIT");

  // Errors are exceptions, before anything is started.
  try {
    float x[3];
    comm->reduceScatter({"a"}, {x, {3}}, {x, {1}}, 0, Reduction::Sum);
    expect(false, "reduce_scatter of 3 over 2 did not throw", 0, 1);
  } catch (const std::invalid_argument &) {
  }

  int64_t failures = gFailures;
  CommTensor total{&failures, {1}, ElementType::I64};
  comm->allReduce({"a", "b"}, total, total, Reduction::Sum);
  if (gRank == 0)
    std::printf("%s: %lld failures on %d ranks\n",
                failures ? "FAILED" : "PASSED",
                static_cast<long long>(failures), size);
  comm.reset();
  mpiFinalize();
  return failures ? 1 : 0;
}
