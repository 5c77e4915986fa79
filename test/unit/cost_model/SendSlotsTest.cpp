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

/// Stage 1 takes microbatch 1 before 0: with one slot, stage 0 cannot send
/// 1 before 0 is received, and stage 1 waits for 1.
TEST(SendSlots, ReceivingOutOfOrderNeedsTwoSlots) {
  using P = PassKind;
  std::vector<std::vector<PipelineSlot>> orders = {
      {{P::Forward, 0, 0}, {P::Forward, 1, 0}, {P::Backward, 0, 0},
       {P::Backward, 1, 0}},
      {{P::Forward, 1, 0}, {P::Forward, 0, 0}, {P::Backward, 0, 0},
       {P::Backward, 1, 0}}};
  EXPECT_FALSE(runsToTheEnd(orders, 1, uniform(2, 1, 1)));
  EXPECT_TRUE(runsToTheEnd(orders, 1, uniform(2, 1, 2)));

  // Lowered from four each: stage 0's forward sends keep two, the rest
  // (one backward send; unused counts) one.
  absl::StatusOr<SendSlots> lowered =
      lowerSendSlots(orders, 1, uniform(2, 1, 4));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->at(0, 0, false), 2);
  EXPECT_EQ(lowered->at(1, 0, true), 1);
  EXPECT_TRUE(runsToTheEnd(orders, 1, *lowered));
  EXPECT_FALSE(lowerSendSlots(orders, 1, uniform(2, 1, 1)).ok());
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
    EXPECT_TRUE(runsToTheEnd(ordersOf(c.kind, c.p, c.m, c.v), c.v, *s));
  }
}

TEST(SendSlots, RejectsEmptyPipelines) {
  EXPECT_FALSE(minimalSendSlots(ScheduleKind::OneFOneB, 0, 4).ok());
  EXPECT_FALSE(minimalSendSlots(ScheduleKind::OneFOneB, 2, 0).ok());
}

} // namespace
