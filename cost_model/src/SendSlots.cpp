//===- SendSlots.cpp - Buffers of pipeline sends, no more than needed -----===//
//
// The simulation only orders events: whether a run deadlocks does not
// depend on how long passes take, since a pass that can run stays able to
// run until it does. A pass is taken as one event (slot waits, receives,
// sends); the runtime waits for slots first and posts its sends last, so
// a run that completes here completes there.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/SendSlots.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include <algorithm>
#include <deque>
#include <map>

namespace cleave::cost {

bool runsToTheEnd(const std::vector<std::vector<PipelineSlot>> &orders,
                  int chunks, const SendSlots &counts) {
  int p = static_cast<int>(orders.size());
  int numVirtual = p * chunks;
  int microbatches = 0;
  for (const auto &order : orders)
    for (const PipelineSlot &s : order)
      microbatches = std::max(microbatches, s.microbatch + 1);
  // done[direction][virtual stage][microbatch]: the forward (0) or the
  // backward that sends the input gradient (1) has run.
  std::vector<char> done(2 * numVirtual * microbatches, 0);
  auto doneAt = [&](int dir, int vs, int m) -> char & {
    return done[(dir * numVirtual + vs) * microbatches + m];
  };
  auto canRun = [&](int stage, const PipelineSlot &s) {
    if (s.pass == PassKind::WeightGrad)
      return true;
    int dir = s.pass == PassKind::Forward ? 0 : 1;
    int vs = s.chunk * p + stage;
    // From: the previous virtual stage's forward, the next one's backward.
    int from = dir == 0 ? vs - 1 : vs + 1;
    if (from >= 0 && from < numVirtual && !doneAt(dir, from, s.microbatch))
      return false;
    // To: the slot's last send, microbatch m - k, must have been received.
    int to = dir == 0 ? vs + 1 : vs - 1;
    if (to < 0 || to >= numVirtual)
      return true;
    int k = counts.at(stage, s.chunk, dir == 1);
    return s.microbatch - k < 0 || doneAt(dir, to, s.microbatch - k);
  };
  std::vector<size_t> next(p, 0);
  std::deque<int> work;
  std::vector<char> queued(p, 1);
  for (int s = 0; s < p; ++s)
    work.push_back(s);
  while (!work.empty()) {
    int s = work.front();
    work.pop_front();
    queued[s] = 0;
    bool ran = false;
    while (next[s] < orders[s].size() && canRun(s, orders[s][next[s]])) {
      const PipelineSlot &slot = orders[s][next[s]++];
      if (slot.pass != PassKind::WeightGrad)
        doneAt(slot.pass == PassKind::Forward ? 0 : 1, slot.chunk * p + s,
               slot.microbatch) = 1;
      ran = true;
    }
    if (!ran)
      continue;
    // Only the neighbouring stages send to or receive from this one.
    for (int n : {(s + 1) % p, (s + p - 1) % p})
      if (!queued[n]) {
        queued[n] = 1;
        work.push_back(n);
      }
  }
  for (int s = 0; s < p; ++s)
    if (next[s] != orders[s].size())
      return false;
  return true;
}

absl::Status checkMessageOrder(
    const std::vector<std::vector<PipelineSlot>> &orders, int chunks) {
  int p = static_cast<int>(orders.size());
  int numVirtual = p * chunks;
  // Per (from, to) stage pair: the messages in the sender's order and in
  // the receiver's, as (direction, chunk of the sender, microbatch).
  using Message = std::array<int, 3>;
  std::map<std::pair<int, int>, std::vector<Message>> sent, received;
  for (int s = 0; s < p; ++s)
    for (const PipelineSlot &slot : orders[s]) {
      if (slot.pass == PassKind::WeightGrad)
        continue;
      int dir = slot.pass == PassKind::Forward ? 0 : 1;
      int vs = slot.chunk * p + s;
      int to = dir == 0 ? vs + 1 : vs - 1;
      if (to >= 0 && to < numVirtual)
        sent[{s, to % p}].push_back({dir, slot.chunk, slot.microbatch});
      int from = dir == 0 ? vs - 1 : vs + 1;
      if (from >= 0 && from < numVirtual)
        received[{from % p, s}].push_back({dir, from / p, slot.microbatch});
    }
  for (auto &[link, messages] : sent) {
    if (received[link] != messages)
      return absl::InvalidArgumentError(absl::StrCat(
          "stage ", link.second, " receives the messages of stage ",
          link.first,
          " in another order than they are sent; point-to-point messages "
          "match in order"));
  }
  for (auto &[link, messages] : received)
    if (!sent.count(link) && !messages.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("stage ", link.second, " receives from stage ",
                       link.first, " what it never sends"));
  return absl::OkStatus();
}

absl::StatusOr<SendSlots>
lowerSendSlots(const std::vector<std::vector<PipelineSlot>> &orders,
               int chunks, SendSlots counts) {
  int stages = static_cast<int>(orders.size());
  if (absl::Status order = checkMessageOrder(orders, chunks); !order.ok())
    return order;
  if (!runsToTheEnd(orders, chunks, counts))
    return absl::InternalError(
        "the pipeline schedule deadlocks even with the send slots given");
  // Usually one slot each is enough (every schedule here so far): one run
  // shows it.
  SendSlots ones = counts;
  for (auto &stage : ones.slots)
    for (auto &chunk : stage)
      for (int &k : chunk)
        k = std::min(k, 1);
  if (runsToTheEnd(orders, chunks, ones))
    return ones;
  for (int s = 0; s < stages; ++s)
    for (int c = 0; c < chunks; ++c)
      for (int dir = 0; dir < 2; ++dir) {
        int &k = counts.slots[s][c][dir];
        int lo = 1, hi = k; // hi runs to the end
        while (lo < hi) {
          k = (lo + hi) / 2;
          if (runsToTheEnd(orders, chunks, counts))
            hi = k;
          else
            lo = k + 1;
        }
        k = hi;
      }
  return counts;
}

absl::StatusOr<SendSlots> minimalSendSlots(ScheduleKind kind, int stages,
                                           int microbatches, int chunks) {
  if (stages < 1 || microbatches < 1 || chunks < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("send slots need at least one stage, microbatch and "
                     "chunk (got ",
                     stages, ", ", microbatches, ", ", chunks, ")"));
  std::vector<std::vector<PipelineSlot>> orders;
  for (int s = 0; s < stages; ++s) {
    auto order = pipelineOrder(kind, stages, s, microbatches, chunks);
    if (!order.ok())
      return order.status();
    orders.push_back(*std::move(order));
  }
  // Start from a slot per microbatch in flight on the stage (from its
  // forward to the last pass that reads its stash), capped by the
  // microbatch count.
  PassKind last = kind == ScheduleKind::ZeroBubbleH1 ? PassKind::WeightGrad
                                                    : PassKind::Backward;
  int numVirtual = stages * chunks;
  SendSlots counts;
  counts.slots.assign(stages, std::vector<std::array<int, 2>>(chunks));
  for (int s = 0; s < stages; ++s) {
    int held = 0, peak = 1;
    for (const PipelineSlot &slot : orders[s]) {
      held += slot.pass == PassKind::Forward ? 1 : slot.pass == last ? -1 : 0;
      peak = std::max(peak, held);
    }
    peak = std::min(peak, microbatches);
    for (int c = 0; c < chunks; ++c) {
      int vs = c * stages + s;
      counts.slots[s][c] = {vs + 1 < numVirtual ? peak : 0, vs > 0 ? peak : 0};
    }
  }
  return lowerSendSlots(orders, chunks, std::move(counts));
}


} // namespace cleave::cost
