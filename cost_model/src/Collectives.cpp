//===- Collectives.cpp - Collective algorithms on a cluster's links -------===//
//
// Latencies follow NCCL's tuner: a ring collective of n ranks over m nodes
// takes `steps` hops of which the inter-node ones (2(m-1) for all-reduce,
// m-1 for the others) pay the network latency and the rest the intra-node
// one; a tree pays 2((k-1) intra + ceil(log2 m) network) hops. NCCL's tree
// moves twice the data per rank (its algorithm bandwidth is half the bus
// bandwidth, derated by 0.9), so it wins on latency, the ring on bandwidth.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/Collectives.h"
#include "Strings.h"

#include "cleave/cost_model/Profile.h"

#include "absl/container/inlined_vector.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace cleave::cost {

double collectivesBesidePass(double pass, double comm, double layers,
                             double hidden) {
  // Never more than stalling the pass: with one layer, its share is all.
  double beside = std::min(
      comm, std::max(0.0, comm - pass) + comm / std::max(1.0, layers));
  double share = std::clamp(hidden, 0.0, 1.0);
  return share * beside + (1 - share) * comm;
}

double collectiveWindowHidden(const Cluster &cluster, const Profile *profile) {
  if (cluster.commOverlapsCompute)
    return 1.0;
  if (profile && profile->collectiveWindowHidden)
    return std::clamp(*profile->collectiveWindowHidden, 0.0, 1.0);
  return 0.0;
}
namespace {

constexpr std::pair<Collective, std::string_view> kCollectiveNames[] = {
    {Collective::AllReduce, "all-reduce"},
    {Collective::AllGather, "all-gather"},
    {Collective::ReduceScatter, "reduce-scatter"},
    {Collective::AllToAll, "all-to-all"},
    {Collective::Broadcast, "broadcast"},
    {Collective::SendRecv, "send-recv"}};

// What one collective call sees of the cluster, after profile overrides and
// sharing.
struct Links {
  double intraBus = 0; // NCCL bus bandwidth inside a node
  double nic = 0;      // achieved bandwidth of one NIC
  double nicsPerNode = 0;
  double nicsPerDevice = 1;
  double share = 1;
  double intraLatency = 0;
  double netLatency = 0;
  double overhead = 0;

  // Network bandwidth out of one node for a group with k ranks there, when
  // c groups of the same shape share the node (see Collectives.h).
  double netBus(double k, double c) const {
    double nics = std::min(nicsPerNode, c * k * nicsPerDevice);
    return nics / c * nic * share;
  }
};

Links linksOf(const Cluster &cluster, const Profile *profile,
              const CollectiveOptions &options) {
  Links links;
  links.share = options.bandwidthShare;
  links.intraBus = (profile && profile->intraNodeBusBandwidth
                        ? *profile->intraNodeBusBandwidth
                        : cluster.intraNodeBusBandwidth()) *
                   links.share;
  links.nic = profile && profile->nicBandwidth ? *profile->nicBandwidth
                                               : cluster.achievedNicBandwidth();
  links.nicsPerNode = static_cast<double>(cluster.network.nicsPerNode);
  links.nicsPerDevice =
      std::max(1.0, links.nicsPerNode / cluster.devicesPerNode);
  links.intraLatency = cluster.intraNode.latency;
  links.netLatency = cluster.network.latency;
  links.overhead = cluster.efficiency.collectiveOverhead;
  return links;
}

struct Priced {
  double latency = 0;
  double transfer = 0;
  double total() const { return latency + transfer; }
};

double log2Ceil(int64_t x) {
  return x <= 1 ? 0.0 : std::ceil(std::log2(static_cast<double>(x)));
}

// Bus bandwidth of a ring or tree over placement p: the intra-node fabric
// and, across nodes, the network share of the group.
double ringBus(const GroupPlacement &p, const Links &l, double concurrent) {
  if (p.nodes == 1)
    return l.intraBus;
  double net = l.netBus(static_cast<double>(p.maxRanksPerNode), concurrent);
  return p.maxRanksPerNode == 1 ? net : std::min(l.intraBus, net);
}

// Hops of a ring pass over n ranks and m nodes: `interSteps` of them cross
// nodes.
double ringLatency(double steps, double interSteps, const Links &l) {
  return l.overhead + (steps - interSteps) * l.intraLatency +
         interSteps * l.netLatency;
}

Priced allReduceRing(double bytes, const GroupPlacement &p, const Links &l,
                     double concurrent) {
  double n = static_cast<double>(p.size), m = static_cast<double>(p.nodes);
  return {ringLatency(2 * (n - 1), 2 * (m - 1), l),
          2 * (n - 1) / n * bytes / ringBus(p, l, concurrent)};
}

// NCCL's tuner derates the tree's bus bandwidth by 0.9 against the ring's
// (tuning.cc: `busBw*.9` for NCCL_ALGO_TREE); trees pipeline less evenly.
constexpr double kTreeBandwidthFactor = 0.9;

Priced allReduceTree(double bytes, const GroupPlacement &p, const Links &l,
                     double concurrent) {
  double k = static_cast<double>(p.maxRanksPerNode);
  return {l.overhead +
              2 * ((k - 1) * l.intraLatency + log2Ceil(p.nodes) * l.netLatency),
          2 * bytes / (kTreeBandwidthFactor * ringBus(p, l, concurrent))};
}

// Reduce-scatter inside each node, all-reduce of 1/k of the data across
// nodes (k such groups per node at once, one per local rank), all-gather
// inside each node: three NCCL calls.
Priced allReduceHierarchical(double bytes, const GroupPlacement &p,
                             const Links &l, double concurrent) {
  double k = static_cast<double>(p.maxRanksPerNode);
  Priced intra = {2 * (k - 1) * l.intraLatency + 2 * l.overhead,
                  2 * (k - 1) / k * bytes / l.intraBus};
  GroupPlacement across{p.nodes, p.nodes, 1, true};
  Priced ring = allReduceRing(bytes / k, across, l, concurrent * k);
  Priced tree = allReduceTree(bytes / k, across, l, concurrent * k);
  Priced inter = ring.total() <= tree.total() ? ring : tree;
  return {intra.latency + inter.latency, intra.transfer + inter.transfer};
}

Priced gatherOrScatterRing(double bytes, const GroupPlacement &p,
                           const Links &l, double concurrent) {
  double n = static_cast<double>(p.size), m = static_cast<double>(p.nodes);
  return {ringLatency(n - 1, m - 1, l),
          (n - 1) / n * bytes / ringBus(p, l, concurrent)};
}

Priced broadcastRing(double bytes, const GroupPlacement &p, const Links &l,
                     double concurrent) {
  double n = static_cast<double>(p.size), m = static_cast<double>(p.nodes);
  return {ringLatency(n - 1, m - 1, l), bytes / ringBus(p, l, concurrent)};
}

// Every rank sends bytes/n to each other rank. Inside the node that goes
// over the rank's own links; off the node the k ranks there share the NICs.
Priced allToAllPairwise(double bytes, const GroupPlacement &p, const Links &l,
                        double concurrent) {
  double n = static_cast<double>(p.size);
  double k = static_cast<double>(p.maxRanksPerNode);
  double intra = k > 1 ? (k - 1) / n * bytes / l.intraBus : 0.0;
  double inter = 0;
  if (p.nodes > 1)
    inter = k * (n - k) / n * bytes / l.netBus(k, concurrent);
  double hop = p.nodes > 1 ? l.netLatency : l.intraLatency;
  return {l.overhead + (n - 1) * hop, std::max(intra, inter)};
}

Priced sendRecvDirect(double bytes, const GroupPlacement &p, const Links &l,
                      double concurrent) {
  if (p.nodes == 1)
    return {l.overhead + l.intraLatency, bytes / l.intraBus};
  return {l.overhead + l.netLatency, bytes / l.netBus(1, concurrent)};
}

/// Inline: the search prices collectives millions of times.
absl::InlinedVector<Algorithm, 3> algorithmsOf(Collective kind,
                                               const GroupPlacement &p) {
  switch (kind) {
  case Collective::AllReduce:
    if (p.nodes > 1 && p.maxRanksPerNode > 1 && p.uniform)
      return {Algorithm::Ring, Algorithm::Tree, Algorithm::Hierarchical};
    return {Algorithm::Ring, Algorithm::Tree};
  case Collective::AllGather:
  case Collective::ReduceScatter:
  case Collective::Broadcast:
    return {Algorithm::Ring};
  case Collective::AllToAll:
    return {Algorithm::Pairwise};
  case Collective::SendRecv:
    return {Algorithm::Direct};
  }
  return {};
}

Priced price(Collective kind, Algorithm algorithm, double bytes,
             const GroupPlacement &p, const Links &l, double concurrent) {
  switch (algorithm) {
  case Algorithm::Ring:
    if (kind == Collective::AllReduce)
      return allReduceRing(bytes, p, l, concurrent);
    if (kind == Collective::Broadcast)
      return broadcastRing(bytes, p, l, concurrent);
    return gatherOrScatterRing(bytes, p, l, concurrent);
  case Algorithm::Tree:
    return allReduceTree(bytes, p, l, concurrent);
  case Algorithm::Hierarchical:
    return allReduceHierarchical(bytes, p, l, concurrent);
  case Algorithm::Pairwise:
    return allToAllPairwise(bytes, p, l, concurrent);
  case Algorithm::Direct:
    return sendRecvDirect(bytes, p, l, concurrent);
  case Algorithm::Auto:
    break;
  }
  return {};
}

} // namespace

std::string_view collectiveName(Collective kind) {
  for (const auto &[k, name] : kCollectiveNames)
    if (k == kind)
      return name;
  return "all-reduce";
}

absl::StatusOr<Collective> parseCollective(std::string_view name) {
  std::vector<std::string_view> names;
  for (const auto &[kind, known] : kCollectiveNames) {
    if (known == name)
      return kind;
    names.push_back(known);
  }
  return absl::InvalidArgumentError(
      cat("unknown collective '", name, "' (known: ", join(names, ", "), ")"));
}

std::string_view algorithmName(Algorithm algorithm) {
  switch (algorithm) {
  case Algorithm::Auto:
    return "auto";
  case Algorithm::Ring:
    return "ring";
  case Algorithm::Tree:
    return "tree";
  case Algorithm::Hierarchical:
    return "hierarchical";
  case Algorithm::Pairwise:
    return "pairwise";
  case Algorithm::Direct:
    return "direct";
  }
  return "auto";
}

Group Group::strided(int64_t first, int64_t size, int64_t stride) {
  Group group;
  for (int64_t i = 0; i < size; ++i)
    group.ranks.push_back(first + i * stride);
  return group;
}

absl::StatusOr<GroupPlacement> placeGroup(const Group &group,
                                          const Cluster &cluster) {
  if (group.ranks.empty())
    return absl::InvalidArgumentError("a group needs at least one rank");
  for (int64_t rank : group.ranks)
    if (rank < 0 || rank >= cluster.numDevices())
      return absl::InvalidArgumentError(
          cat("rank ", rank, " is outside cluster '", cluster.name, "' (",
              cluster.numDevices(), " devices)"));
  // Sorted ranks (the planners' strided groups already are; the search
  // places groups hundreds of thousands of times, so no tree per call):
  // duplicates are neighbours, and a node's ranks are a run (nodeOf is
  // rank / devicesPerNode).
  std::vector<int64_t> sorted;
  const std::vector<int64_t> *sortedRanks = &group.ranks;
  if (!std::is_sorted(group.ranks.begin(), group.ranks.end())) {
    sorted = group.ranks;
    std::sort(sorted.begin(), sorted.end());
    sortedRanks = &sorted;
  }
  const std::vector<int64_t> &ranks = *sortedRanks;
  GroupPlacement placement;
  placement.size = static_cast<int64_t>(ranks.size());
  int64_t firstCount = -1, count = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0 && ranks[i] == ranks[i - 1])
      return absl::InvalidArgumentError(
          cat("rank ", ranks[i], " appears twice in the group"));
    ++count;
    bool runEnds = i + 1 == ranks.size() ||
                   cluster.nodeOf(ranks[i + 1]) != cluster.nodeOf(ranks[i]);
    if (!runEnds)
      continue;
    ++placement.nodes;
    placement.maxRanksPerNode = std::max(placement.maxRanksPerNode, count);
    if (firstCount < 0)
      firstCount = count;
    placement.uniform &= count == firstCount;
    count = 0;
  }
  return placement;
}

double inStepCollectiveWait(const Cluster &cluster, const Profile *profile) {
  double full = cluster.coresPerNode > 0
                    ? double(cluster.devicesPerNode) / cluster.coresPerNode
                    : 1.0;
  if (full <= 1 || !profile ||
      !(profile->inStepCollectiveWait || profile->inStepCollectiveSlowdown))
    return 0.0;
  double busy =
      std::clamp((cluster.computeSharing() - 1) / (full - 1), 0.0, 1.0);
  if (profile->inStepCollectiveWait)
    return *profile->inStepCollectiveWait * busy;
  // An older profile's factor: on the 1 MiB all-gather the wait was
  // measured beside, as the profile's own curve times it.
  auto gather =
      estimateCollective(Collective::AllGather, double(1 << 20),
                         Group::strided(0, cluster.devicesPerNode), cluster,
                         profile);
  if (!gather.ok())
    return 0.0;
  return (*profile->inStepCollectiveSlowdown - 1) * gather->seconds * busy;
}

double busBandwidth(Collective kind, double bytes, int64_t groupSize,
                    double seconds) {
  double n = static_cast<double>(groupSize);
  double factor = 1;
  switch (kind) {
  case Collective::AllReduce:
    factor = 2 * (n - 1) / n;
    break;
  case Collective::AllGather:
  case Collective::ReduceScatter:
  case Collective::AllToAll:
    factor = (n - 1) / n;
    break;
  case Collective::Broadcast:
  case Collective::SendRecv:
    factor = 1;
    break;
  }
  return bytes * factor / seconds;
}

absl::StatusOr<CollectiveCost>
estimateCollective(Collective kind, double bytes, const Group &group,
                   const Cluster &cluster, const Profile *profile,
                   const CollectiveOptions &options) {
  absl::StatusOr<GroupPlacement> placement = placeGroup(group, cluster);
  if (!placement.ok())
    return placement.status();
  return estimateCollective(kind, bytes, *placement, cluster, profile,
                            options);
}

absl::StatusOr<CollectiveCost>
estimateCollective(Collective kind, double bytes, const GroupPlacement &p,
                   const Cluster &cluster, const Profile *profile,
                   const CollectiveOptions &options) {
  if (!(bytes >= 0))
    return absl::InvalidArgumentError(
        cat("collective size must not be negative (got ", bytes, " bytes)"));
  if (options.concurrentGroups < 1)
    return absl::InvalidArgumentError("concurrentGroups must be at least 1");
  if (!(options.bandwidthShare > 0 && options.bandwidthShare <= 1))
    return absl::InvalidArgumentError(cat(
        "bandwidthShare must be in (0, 1] (got ", options.bandwidthShare, ")"));
  if (kind == Collective::SendRecv && p.size != 2)
    return absl::InvalidArgumentError(
        cat("send-recv needs a group of 2 ranks (got ", p.size, ")"));
  if (options.concurrentGroups * p.maxRanksPerNode > cluster.devicesPerNode)
    return absl::InvalidArgumentError(
        cat(options.concurrentGroups, " concurrent groups of ",
            p.maxRanksPerNode, " ranks per node do not fit in ",
            cluster.devicesPerNode, " devices per node"));
  if (p.nodes > 1 && cluster.network.nicsPerNode < 1)
    return absl::InvalidArgumentError(cat("the group spans ", p.nodes,
                                          " nodes but cluster '", cluster.name,
                                          "' has no NICs"));

  absl::InlinedVector<Algorithm, 3> valid = algorithmsOf(kind, p);
  if (options.algorithm != Algorithm::Auto &&
      std::find(valid.begin(), valid.end(), options.algorithm) == valid.end()) {
    std::vector<std::string_view> names;
    for (Algorithm a : valid)
      names.push_back(algorithmName(a));
    return absl::InvalidArgumentError(
        cat(algorithmName(options.algorithm), " is not an algorithm of ",
            collectiveName(kind), " on this group (valid: ", join(names, ", "),
            ")"));
  }

  CollectiveCost cost;
  cost.algorithm = options.algorithm;
  if (p.size == 1 || bytes == 0)
    return cost;

  if (profile && options.algorithm == Algorithm::Auto &&
      options.bandwidthShare == 1) {
    CollectiveKey key{kind, p.size, p.maxRanksPerNode,
                      options.concurrentGroups};
    if (const CollectiveCurve *curve = profile->findCollective(key)) {
      cost.seconds = curve->seconds(bytes);
      cost.profiled = true;
      return cost;
    }
  }

  Links links = linksOf(cluster, profile, options);
  double concurrent = static_cast<double>(options.concurrentGroups);
  const Algorithm *first = valid.data(), *last = valid.data() + valid.size();
  if (options.algorithm != Algorithm::Auto) {
    first = &options.algorithm;
    last = first + 1;
  }
  double best = std::numeric_limits<double>::infinity();
  for (const Algorithm *a = first; a != last; ++a) {
    Algorithm algorithm = *a;
    Priced priced = price(kind, algorithm, bytes, p, links, concurrent);
    // Mid-size messages do not fill NCCL's chunk pipeline.
    priced.transfer *=
        1.0 + cluster.efficiency.collectiveHalfBandwidthBytes /
                  std::max(bytes, 1.0);
    if (priced.total() < best) {
      best = priced.total();
      cost.seconds = priced.total();
      cost.latencySeconds = priced.latency;
      cost.algorithm = algorithm;
    }
  }
  return cost;
}

} // namespace cleave::cost
