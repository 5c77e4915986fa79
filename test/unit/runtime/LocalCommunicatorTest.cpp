//===- LocalCommunicatorTest.cpp - Groups of one rank and mesh arithmetic -===//

#include "cleave/runtime/comm/Communicator.h"

#include <gtest/gtest.h>

using namespace cleave::comm;

namespace {

TEST(MeshInfoTest, GroupsArePerAxisRowMajor) {
  MeshInfo mesh{{"pp", "dp", "tp"}, {2, 3, 2}, {1, 2, 0}};
  EXPECT_EQ(mesh.numRanks(), 12);
  EXPECT_EQ(mesh.rankOf(mesh.coords), 1 * 6 + 2 * 2 + 0);
  EXPECT_EQ(mesh.groupRanks({"tp"}), (std::vector<int64_t>{10, 11}));
  EXPECT_EQ(mesh.groupRanks({"dp"}), (std::vector<int64_t>{6, 8, 10}));
  EXPECT_EQ(mesh.groupRank({"dp"}), 2);
  // Axis order in the request does not matter: mesh order is group order.
  EXPECT_EQ(mesh.groupRanks({"tp", "dp"}), mesh.groupRanks({"dp", "tp"}));
  EXPECT_EQ(mesh.groupRank({"tp", "dp"}), 4);
  EXPECT_EQ(mesh.peer("pp", 1), 4);
  EXPECT_EQ(mesh.peer("dp", -1), 8);
  // An axis the mesh lacks has size 1.
  EXPECT_EQ(mesh.groupRanks({"cp"}), (std::vector<int64_t>{10}));
  EXPECT_EQ(mesh.coordsOf(10), mesh.coords);
}

TEST(LocalCommunicatorTest, CollectivesCopy) {
  auto comm = createLocalCommunicator({{"dp", "tp"}, {1, 1}, {0, 0}});
  std::vector<float> in = {1, 2, 3, 4, 5, 6}, out(6);
  CommTensor a{in.data(), {2, 3}}, b{out.data(), {2, 3}};
  comm->allReduce({"dp"}, a, b, Reduction::Mean);
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), 0);
  comm->allGather({"tp"}, a, b, 1);
  EXPECT_EQ(out, in);
  std::fill(out.begin(), out.end(), 0);
  comm->allToAllAsync({"tp"}, a, b, 0, 1)->wait();
  EXPECT_EQ(out, in);
  comm->broadcast({"tp"}, a, 0);
  EXPECT_THROW(comm->broadcast({"tp"}, a, 1), std::invalid_argument);
  CommTensor wrong{out.data(), {3, 2}};
  EXPECT_THROW(comm->allReduce({"dp"}, a, wrong, Reduction::Sum),
               std::invalid_argument);
}

TEST(LocalCommunicatorTest, SendIsReceivedByTag) {
  auto comm = createLocalCommunicator();
  std::vector<float> x = {1, 2}, y = {3, 4}, out(2);
  CommTensor o{out.data(), {2}};
  auto pending = comm->recvAsync("pp", 1, 7, o);
  comm->send("pp", 1, 5, CommTensor{y.data(), {2}});
  comm->send("pp", 1, 7, CommTensor{x.data(), {2}});
  pending->wait();
  EXPECT_EQ(out, x);
  comm->recv("pp", -1, 5, o);
  EXPECT_EQ(out, y);
  EXPECT_THROW(comm->recv("pp", 1, 5, o), std::runtime_error);
}

TEST(LocalCommunicatorTest, RejectsMeshOfManyRanks) {
  EXPECT_THROW(createLocalCommunicator({{"dp"}, {2}, {0}}),
               std::invalid_argument);
}

} // namespace
