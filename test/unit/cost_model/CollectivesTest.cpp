//===- CollectivesTest.cpp - Collective times and link selection ----------===//
//
// Expected times are built here from nccl-tests' data-volume conventions and
// the DGX A100 figures (300 GB/s NVLink per direction at 230 GB/s NCCL bus
// bandwidth, 8 NICs of 24 GB/s achieved, NCCL's 0.6 us NVLink and 2.7 us
// network hops and 6.6 us base latency).
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/Collectives.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace cleave::cost;

namespace {

constexpr double kBus = 230e9; // NVLink bus bandwidth in a DGX A100
constexpr double kNic = 24e9;  // achieved per HDR NIC
constexpr double kNics = 8;
constexpr double kIntraHop = 0.6e-6;
constexpr double kNetHop = 2.7e-6;
constexpr double kBase = 6.6e-6;
constexpr double kGiB = 1024.0 * 1024 * 1024;

/// The formulas below are for large messages; the message-size ramp is
/// switched off here and tested on its own.
Cluster dgx(int nodes, const std::string &extra = "") {
  absl::StatusOr<Cluster> c = parseCluster(
      "dgx-a100-80g,nodes=" + std::to_string(nodes) +
      ",efficiency.collective_half_bandwidth_bytes=0" + extra);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

CollectiveCost mustEstimate(Collective kind, double bytes, const Group &group,
                            const Cluster &cluster,
                            CollectiveOptions options = {}) {
  absl::StatusOr<CollectiveCost> cost =
      estimateCollective(kind, bytes, group, cluster, nullptr, options);
  EXPECT_TRUE(cost.ok()) << cost.status();
  return cost.ok() ? *cost : CollectiveCost();
}

std::string errorOf(Collective kind, const Group &group, const Cluster &cluster,
                    CollectiveOptions options = {}) {
  absl::StatusOr<CollectiveCost> cost =
      estimateCollective(kind, 1e6, group, cluster, nullptr, options);
  EXPECT_FALSE(cost.ok());
  return cost.ok() ? "" : std::string(cost.status().message());
}

void expectRel(double actual, double expected, double relative) {
  EXPECT_NEAR(actual, expected, std::abs(expected) * relative);
}

} // namespace

TEST(GroupPlacement, CountsNodesAndRanksPerNode) {
  Cluster c = dgx(4);
  absl::StatusOr<GroupPlacement> inNode = placeGroup(Group::strided(8, 8), c);
  ASSERT_TRUE(inNode.ok());
  EXPECT_EQ(inNode->nodes, 1);
  EXPECT_EQ(inNode->maxRanksPerNode, 8);
  absl::StatusOr<GroupPlacement> dataParallel =
      placeGroup(Group::strided(3, 4, 8), c);
  ASSERT_TRUE(dataParallel.ok());
  EXPECT_EQ(dataParallel->nodes, 4);
  EXPECT_EQ(dataParallel->maxRanksPerNode, 1);
  EXPECT_TRUE(dataParallel->uniform);
  absl::StatusOr<GroupPlacement> uneven = placeGroup(Group{{0, 1, 2, 8}}, c);
  ASSERT_TRUE(uneven.ok());
  EXPECT_EQ(uneven->maxRanksPerNode, 3);
  EXPECT_FALSE(uneven->uniform);

  EXPECT_NE(errorOf(Collective::AllReduce, Group{{0, 32}}, c)
                .find("rank 32 is outside"),
            std::string::npos);
  EXPECT_NE(errorOf(Collective::AllReduce, Group{{0, 1, 1}}, c)
                .find("rank 1 appears twice"),
            std::string::npos);
  EXPECT_NE(errorOf(Collective::AllReduce, Group{}, c).find("at least one"),
            std::string::npos);
}

TEST(AllReduce, InsideOneNodeRunsAtNvlinkBusBandwidth) {
  Cluster c = dgx(1);
  double bytes = kGiB;
  CollectiveCost cost =
      mustEstimate(Collective::AllReduce, bytes, Group::strided(0, 8), c);
  EXPECT_EQ(cost.algorithm, Algorithm::Ring);
  double expected = kBase + 14 * kIntraHop + 2.0 * 7 / 8 * bytes / kBus;
  expectRel(cost.seconds, expected, 1e-3);
  expectRel(cost.latencySeconds, kBase + 14 * kIntraHop, 1e-9);
  // nccl-tests would report ~230 GB/s bus bandwidth for a large message.
  expectRel(busBandwidth(Collective::AllReduce, bytes, 8, cost.seconds), kBus,
            0.01);
}

TEST(AllReduce, FullNodesAcrossTheNetworkUseEveryNic) {
  // 16 nodes x 8 ranks: a ring crosses each node boundary once per channel,
  // so the node's 8 NICs (192 GB/s) are the bottleneck, below NVLink.
  Cluster c = dgx(16);
  double bytes = kGiB;
  double n = 128;
  CollectiveCost cost =
      mustEstimate(Collective::AllReduce, bytes, Group::strided(0, 128), c);
  EXPECT_EQ(cost.algorithm, Algorithm::Ring);
  double latency = kBase + (2 * (n - 1) - 30) * kIntraHop + 30 * kNetHop;
  double expected = latency + 2 * (n - 1) / n * bytes / (kNics * kNic);
  expectRel(cost.seconds, expected, 1e-3);
  expectRel(busBandwidth(Collective::AllReduce, bytes, 128, cost.seconds),
            kNics * kNic, 0.02);
}

TEST(AllReduce, ConcurrentDataParallelGroupsShareNics) {
  // 64 nodes; a data-parallel group holds one rank per node (stride 8).
  Cluster c = dgx(64);
  double bytes = kGiB, n = 64;
  Group group = Group::strided(0, 64, 8);
  CollectiveOptions eight;
  eight.concurrentGroups = 8;
  eight.algorithm = Algorithm::Ring;
  // One NIC per GPU on a DGX: 8 groups at once still get 24 GB/s each.
  CollectiveCost shared =
      mustEstimate(Collective::AllReduce, bytes, group, c, eight);
  double latency = kBase + 2 * (n - 1) * kNetHop;
  expectRel(shared.seconds, latency + 2 * (n - 1) / n * bytes / kNic, 1e-3);
  // A node with a single NIC splits it eight ways.
  Cluster oneNic = dgx(64, ",network.nics_per_node=1");
  CollectiveCost split =
      mustEstimate(Collective::AllReduce, bytes, group, oneNic, eight);
  expectRel(split.seconds, latency + 2 * (n - 1) / n * bytes / (kNic / 8),
            1e-3);
  // Alone, the group has that NIC to itself.
  CollectiveOptions alone;
  alone.algorithm = Algorithm::Ring;
  CollectiveCost single =
      mustEstimate(Collective::AllReduce, bytes, group, oneNic, alone);
  expectRel(single.seconds, latency + 2 * (n - 1) / n * bytes / kNic, 1e-3);
  // Nine groups of one rank per node do not fit on 8 GPUs.
  CollectiveOptions nine;
  nine.concurrentGroups = 9;
  EXPECT_NE(errorOf(Collective::AllReduce, group, c, nine).find("do not fit"),
            std::string::npos);
}

TEST(AllReduce, TreeWinsSmallMessagesAcrossManyNodes) {
  Cluster c = dgx(64);
  double bytes = 1024;
  CollectiveCost cost =
      mustEstimate(Collective::AllReduce, bytes, Group::strided(0, 512), c);
  EXPECT_EQ(cost.algorithm, Algorithm::Tree);
  // Chain of 8 inside each node, binary tree of depth log2(64) = 6 across.
  double latency = kBase + 2 * (7 * kIntraHop + 6 * kNetHop);
  // NCCL derates the tree's bandwidth by 0.9.
  expectRel(cost.seconds, latency + 2 * bytes / (0.9 * kNics * kNic), 1e-6);

  CollectiveOptions ring;
  ring.algorithm = Algorithm::Ring;
  CollectiveCost forced = mustEstimate(Collective::AllReduce, bytes,
                                       Group::strided(0, 512), c, ring);
  EXPECT_EQ(forced.algorithm, Algorithm::Ring);
  EXPECT_GT(forced.seconds, cost.seconds);
}

TEST(AllReduce, HierarchicalIsThreePhases) {
  Cluster c = dgx(2);
  double bytes = 256e6;
  CollectiveOptions hierarchical;
  hierarchical.algorithm = Algorithm::Hierarchical;
  CollectiveCost cost = mustEstimate(Collective::AllReduce, bytes,
                                     Group::strided(0, 16), c, hierarchical);
  EXPECT_EQ(cost.algorithm, Algorithm::Hierarchical);
  // Reduce-scatter and all-gather over 8 ranks on NVLink, then an
  // all-reduce of 1/8 of the data between 2 nodes, 8 such at once (one
  // NIC each), by ring: 2 network steps (a tree has the same latency here
  // and less bandwidth).
  double intra = 2 * (kBase + 7 * kIntraHop + 7.0 / 8 * bytes / kBus);
  double inter = kBase + 2 * kNetHop + 2.0 * 1 / 2 * (bytes / 8) / kNic;
  expectRel(cost.seconds, intra + inter, 1e-6);

  // With plenty of NICs the flat ring is faster for large messages.
  CollectiveCost automatic =
      mustEstimate(Collective::AllReduce, bytes, Group::strided(0, 16), c);
  EXPECT_LT(automatic.seconds, cost.seconds);

  EXPECT_NE(
      errorOf(Collective::AllReduce, Group::strided(0, 8), c, hierarchical)
          .find("hierarchical is not an algorithm of all-reduce"),
      std::string::npos);
}

TEST(AllGatherReduceScatter, MoveNMinusOneOverNOfTheData) {
  Cluster c = dgx(1);
  double bytes = 2 * kGiB;
  for (Collective kind : {Collective::AllGather, Collective::ReduceScatter}) {
    CollectiveCost cost = mustEstimate(kind, bytes, Group::strided(0, 8), c);
    double expected = kBase + 7 * kIntraHop + 7.0 / 8 * bytes / kBus;
    expectRel(cost.seconds, expected, 1e-6);
    expectRel(busBandwidth(kind, bytes, 8, cost.seconds), kBus, 0.01);
  }
  CollectiveOptions tree;
  tree.algorithm = Algorithm::Tree;
  EXPECT_NE(errorOf(Collective::AllGather, Group::strided(0, 8), c, tree)
                .find("tree is not an algorithm of all-gather"),
            std::string::npos);
}

TEST(AllToAll, RanksOfANodeShareItsNics) {
  // 2 nodes x 8 ranks: each rank sends 8/16 of its buffer off the node,
  // and the node's 8 ranks share 8 NICs: 24 GB/s each.
  Cluster c = dgx(2);
  double bytes = kGiB, n = 16, k = 8;
  CollectiveCost cost =
      mustEstimate(Collective::AllToAll, bytes, Group::strided(0, 16), c);
  EXPECT_EQ(cost.algorithm, Algorithm::Pairwise);
  double perRankNetwork = kNics * kNic / k;
  double inter = (n - k) / n * bytes / perRankNetwork;
  double intra = (k - 1) / n * bytes / kBus;
  double expected = kBase + (n - 1) * kNetHop + std::max(inter, intra);
  expectRel(cost.seconds, expected, 1e-6);
  // Inside one node it is NVLink only.
  CollectiveCost local =
      mustEstimate(Collective::AllToAll, bytes, Group::strided(0, 8), c);
  expectRel(local.seconds, kBase + 7 * kIntraHop + 7.0 / 8 * bytes / kBus,
            1e-6);
}

TEST(BroadcastAndSendRecv, MoveTheWholeBuffer) {
  Cluster c = dgx(2);
  double bytes = kGiB;
  CollectiveCost broadcast =
      mustEstimate(Collective::Broadcast, bytes, Group::strided(0, 8), c);
  expectRel(broadcast.seconds, kBase + 7 * kIntraHop + bytes / kBus, 1e-6);

  CollectiveCost local =
      mustEstimate(Collective::SendRecv, bytes, Group{{0, 1}}, c);
  EXPECT_EQ(local.algorithm, Algorithm::Direct);
  expectRel(local.seconds, kBase + kIntraHop + bytes / kBus, 1e-6);
  CollectiveCost remote =
      mustEstimate(Collective::SendRecv, bytes, Group{{0, 8}}, c);
  expectRel(remote.seconds, kBase + kNetHop + bytes / kNic, 1e-6);
  EXPECT_NE(errorOf(Collective::SendRecv, Group{{0, 1, 2}}, c)
                .find("send-recv needs a group of 2 ranks"),
            std::string::npos);
}

TEST(CollectiveOptions, SharingAndTrivialCases) {
  Cluster c = dgx(1);
  double bytes = kGiB;
  CollectiveOptions half;
  half.bandwidthShare = 0.5;
  CollectiveCost full =
      mustEstimate(Collective::AllReduce, bytes, Group::strided(0, 8), c);
  CollectiveCost shared =
      mustEstimate(Collective::AllReduce, bytes, Group::strided(0, 8), c, half);
  expectRel(shared.seconds - shared.latencySeconds,
            2 * (full.seconds - full.latencySeconds), 1e-9);

  EXPECT_EQ(mustEstimate(Collective::AllReduce, bytes, Group{{3}}, c).seconds,
            0);
  EXPECT_EQ(
      mustEstimate(Collective::AllReduce, 0, Group::strided(0, 8), c).seconds,
      0);
  CollectiveOptions bad;
  bad.bandwidthShare = 0;
  EXPECT_FALSE(estimateCollective(Collective::AllReduce, 1, Group{{0, 1}}, c,
                                  nullptr, bad)
                   .ok());
  EXPECT_FALSE(
      estimateCollective(Collective::AllReduce, -1, Group{{0, 1}}, c).ok());

  // A cluster without NICs cannot run a group that spans nodes.
  Cluster isolated = dgx(2);
  isolated.network.nicsPerNode = 0;
  EXPECT_NE(errorOf(Collective::AllReduce, Group{{0, 8}}, isolated)
                .find("has no NICs"),
            std::string::npos);
}

TEST(CollectiveNames, RoundTrip) {
  for (Collective kind :
       {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
        Collective::AllToAll, Collective::Broadcast, Collective::SendRecv}) {
    absl::StatusOr<Collective> parsed = parseCollective(collectiveName(kind));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_FALSE(parseCollective("allreduce").ok());
}

TEST(AllReduce, MidSizeMessagesReachPartOfTheBandwidth) {
  // With the preset's ramp (half bandwidth at 8 MB), a 32 MB all-reduce in
  // a DGX A100 reaches 230 * 32 / 40 = 184 GB/s of bus bandwidth, a 1 GB one
  // nearly all of it: nccl-tests' curve.
  absl::StatusOr<Cluster> c = parseCluster("dgx-a100-80g");
  ASSERT_TRUE(c.ok());
  Group node = Group::strided(0, 8);
  auto busOf = [&](double bytes) {
    CollectiveCost cost =
        mustEstimate(Collective::AllReduce, bytes, node, *c);
    return busBandwidth(Collective::AllReduce, bytes, 8,
                        cost.seconds - cost.latencySeconds);
  };
  expectRel(busOf(32e6), kBus * 32 / 40, 1e-6);
  expectRel(busOf(1e9), kBus * 1000 / 1008, 1e-6);
  EXPECT_LT(busOf(1e6), 0.15 * kBus);
}
