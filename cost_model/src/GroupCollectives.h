//===- GroupCollectives.h - Collectives over a plan's groups, priced -*- C++ -*-===//
//
// The collectives of a plan run over a handful of rank groups (tensor,
// context, data parallel, the pipeline's neighbours) hundreds of times:
// the transformer's layer pricing and the shared stage scoring
// (StageWorkload.cpp) both place each group on the cluster once and price
// or count collectives over it here.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_COST_MODEL_SRC_GROUPCOLLECTIVES_H
#define CLEAVE_COST_MODEL_SRC_GROUPCOLLECTIVES_H

#include "cleave/cost_model/Collectives.h"
#include "cleave/cost_model/TransformerPlan.h"

#include "absl/status/statusor.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace cleave::cost {

class GroupCollectives {
public:
  GroupCollectives(const Cluster &cluster, const Profile *profile)
      : cluster(cluster), profile(profile) {}

  /// Seconds of one collective moving `bytesPerRank` over `group`, with
  /// `concurrent` groups of the same placement running it at once (a
  /// group of one rank, or no bytes, is free). The callers count every
  /// group of the plan; only those on the same nodes share links: a node
  /// holds at most devicesPerNode / (the group's ranks on it) of them (the
  /// cp groups of tp4/cp2/dp2 on 8-GPU nodes: 8 in the plan, 4 on a node,
  /// the other replica's on other nodes).
  absl::StatusOr<double> collective(Collective kind, double bytesPerRank,
                                    const Group &group,
                                    int64_t concurrent = 1) const {
    if (group.ranks.size() <= 1 || bytesPerRank <= 0)
      return 0.0;
    absl::StatusOr<GroupPlacement> placement = place(group);
    if (!placement.ok())
      return placement.status();
    CollectiveOptions options;
    options.concurrentGroups = std::max<int64_t>(
        1, std::min<int64_t>(concurrent,
                             cluster.devicesPerNode /
                                 std::max<int64_t>(
                                     1, placement->maxRanksPerNode)));
    auto cost = estimateCollective(kind, bytesPerRank, *placement, cluster,
                                   profile, options);
    if (!cost.ok())
      return cost.status();
    return cost->seconds;
  }

  /// placeGroup, once per group.
  absl::StatusOr<GroupPlacement> place(const Group &group) const {
    for (const auto &[known, placement] : placements)
      if (known == group.ranks)
        return placement;
    absl::StatusOr<GroupPlacement> placement = placeGroup(group, cluster);
    if (placement.ok())
      placements.emplace_back(group.ranks, *placement);
    return placement;
  }

  /// Adds `calls` collectives of `bytesEach` over `group` to `tally`,
  /// where `collective` prices them (a group of one or no bytes is free).
  void count(CollectiveTally &tally, Collective kind, double bytesEach,
             const Group &group, double calls = 1) const {
    if (!counting || group.ranks.size() <= 1 || bytesEach <= 0 || calls == 0)
      return;
    auto placement = place(group);
    tally.add(kind, placement.ok() && placement->nodes > 1, calls, bytesEach);
  }

  const Cluster &cluster;
  const Profile *profile;
  /// Whether `count` tallies: a search's memory pass reports nothing, and
  /// tallying was a tenth of its time.
  bool counting = true;

private:
  mutable std::vector<std::pair<std::vector<int64_t>, GroupPlacement>>
      placements;
};

} // namespace cleave::cost

#endif // CLEAVE_COST_MODEL_SRC_GROUPCOLLECTIVES_H
