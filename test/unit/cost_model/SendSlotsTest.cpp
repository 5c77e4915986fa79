//===- SendSlotsTest.cpp - Fewest buffers for pipeline sends --------------===//

#include "cleave/cost_model/SendSlots.h"

#include "gtest/gtest.h"

using namespace cleave::cost;

namespace {

SendSlots uniform(int stages, int chunks, int k) {
  SendSlots s;
  s.slots.assign(stages, std::vector<std::array<int, 2>>(chunks, {k, k}));
  return s;
}

std::vector<std::vector<PipelineSlot>> ordersOf(ScheduleKind kind, int p,
                                                int m, int v) {
  std::vector<std::vector<PipelineSlot>> orders;
  for (int s = 0; s < p; ++s)
    orders.push_back(*pipelineOrder(kind, p, s, m, v));
  return orders;
}

/// Each stage sends two messages before it receives the other's: with one
/// slot, stage 0's second send waits for stage 1 to take the first, which
/// it does only after its own second send, which waits for stage 0 in turn.
TEST(SendSlots, SendingAheadOfReceivingNeedsTwoSlots) {
  using P = PassKind;
  std::vector<std::vector<PipelineSlot>> orders = {
      {{P::Forward, 0, 0}, {P::Forward, 1, 0}, {P::Backward, 0, 0},
       {P::Backward, 1, 0}},
      {{P::Backward, 0, 0}, {P::Backward, 1, 0}, {P::Forward, 0, 0},
       {P::Forward, 1, 0}}};
  EXPECT_TRUE(checkMessageOrder(orders, 1).ok());
  EXPECT_FALSE(runsToTheEnd(orders, 1, uniform(2, 1, 1)));
  EXPECT_TRUE(runsToTheEnd(orders, 1, uniform(2, 1, 2)));

  // Lowered from four each (one each deadlocks, so by bisection, in
  // turn): stage 0's forward sends go down to one while stage 1's still
  // have four, then stage 1's keep two. One less anywhere deadlocks.
  absl::StatusOr<SendSlots> lowered =
      lowerSendSlots(orders, 1, uniform(2, 1, 4));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->at(0, 0, false), 1);
  EXPECT_EQ(lowered->at(1, 0, true), 2);
  EXPECT_TRUE(runsToTheEnd(orders, 1, *lowered));
  SendSlots fewer = *lowered;
  fewer.slots[1][0][1] = 1;
  EXPECT_FALSE(runsToTheEnd(orders, 1, fewer));
  EXPECT_FALSE(lowerSendSlots(orders, 1, uniform(2, 1, 1)).ok());
}

/// Messages between two ranks match in the order they are posted, so a
/// stage taking microbatch 1 before 0 would read the wrong one: refused.
TEST(SendSlots, ReceivingOutOfOrderIsRefused) {
  using P = PassKind;
  std::vector<std::vector<PipelineSlot>> orders = {
      {{P::Forward, 0, 0}, {P::Forward, 1, 0}, {P::Backward, 0, 0},
       {P::Backward, 1, 0}},
      {{P::Forward, 1, 0}, {P::Forward, 0, 0}, {P::Backward, 0, 0},
       {P::Backward, 1, 0}}};
  absl::Status status = checkMessageOrder(orders, 1);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(std::string(status.message()).find("stage 1 receives"),
            std::string::npos)
      << status;
  EXPECT_FALSE(lowerSendSlots(orders, 1, uniform(2, 1, 4)).ok());
}

/// A receive that comes before its send in the other stage's order never
/// runs, however many slots.
TEST(SendSlots, CrossedReceivesDeadlock) {
  using P = PassKind;
  std::vector<std::vector<PipelineSlot>> orders = {
      {{P::Backward, 0, 0}, {P::Forward, 0, 0}},
      {{P::Forward, 0, 0}, {P::Backward, 0, 0}}};
  EXPECT_FALSE(runsToTheEnd(orders, 1, uniform(2, 1, 8)));
}

/// Every schedule here receives each neighbour's sends in the order they
/// are sent, the interleaved one included (its last stage's chunk c feeds
/// chunk c + 1 of the first): one slot per send tensor is enough, where a
/// slot per microbatch in flight gave an interleaved GPT-3 stage 61.
TEST(SendSlots, OneSlotForEverySchedule) {
  struct Case {
    ScheduleKind kind;
    int p, m, v;
  };
  std::vector<Case> cases;
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                            ScheduleKind::ZeroBubbleH1})
    for (int p : {2, 4, 8})
      for (int m : {1, 3, 8, 17})
        cases.push_back({kind, p, m, 1});
  for (auto [p, m, v] : {std::array<int, 3>{2, 4, 2}, {4, 8, 2}, {4, 16, 3},
                         {8, 16, 4}, {16, 96, 3}})
    cases.push_back({ScheduleKind::Interleaved, p, m, v});
  for (const Case &c : cases) {
    SCOPED_TRACE(::testing::Message() << scheduleName(c.kind) << " p=" << c.p
                                      << " m=" << c.m << " v=" << c.v);
    absl::StatusOr<SendSlots> s = minimalSendSlots(c.kind, c.p, c.m, c.v);
    ASSERT_TRUE(s.ok()) << s.status();
    for (int stage = 0; stage < c.p; ++stage)
      for (int chunk = 0; chunk < c.v; ++chunk) {
        int vs = chunk * c.p + stage;
        EXPECT_EQ(s->at(stage, chunk, false), vs + 1 < c.p * c.v ? 1 : 0);
        EXPECT_EQ(s->at(stage, chunk, true), vs > 0 ? 1 : 0);
      }
    auto orders = ordersOf(c.kind, c.p, c.m, c.v);
    EXPECT_TRUE(checkMessageOrder(orders, c.v).ok());
    EXPECT_TRUE(runsToTheEnd(orders, c.v, *s));
  }
}

TEST(SendSlots, RejectsEmptyPipelines) {
  EXPECT_FALSE(minimalSendSlots(ScheduleKind::OneFOneB, 0, 4).ok());
  EXPECT_FALSE(minimalSendSlots(ScheduleKind::OneFOneB, 2, 0).ok());
}

} // namespace
