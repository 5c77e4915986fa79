//===- SimulatorTest.cpp - Simulated timelines against hand-drawn ones ----===//

#include "cleave/cost_model/PipelineSimulation.h"

#include "gtest/gtest.h"

#include <sstream>

using namespace cleave::cost;

namespace {

std::string orderString(const std::vector<PipelineSlot> &order) {
  std::string s;
  for (const PipelineSlot &slot : order) {
    s += slot.pass == PassKind::Forward    ? "F"
         : slot.pass == PassKind::Backward ? "B"
                                           : "W";
    s += std::to_string(slot.microbatch);
    if (slot.chunk)
      s += "." + std::to_string(slot.chunk);
    s += " ";
  }
  return s;
}

std::string order(ScheduleKind kind, int p, int s, int m, int v = 1) {
  auto o = pipelineOrder(kind, p, s, m, v);
  EXPECT_TRUE(o.ok()) << o.status();
  return o.ok() ? orderString(*o) : "";
}

TEST(PipelineOrder, OneFOneBWarmsUpThenAlternates) {
  EXPECT_EQ(order(ScheduleKind::OneFOneB, 4, 0, 6),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  EXPECT_EQ(order(ScheduleKind::OneFOneB, 4, 3, 6),
            "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 ");
  EXPECT_EQ(order(ScheduleKind::GPipe, 2, 1, 3), "F0 F1 F2 B0 B1 B2 ");
}

TEST(PipelineOrder, InterleavedVisitsChunksInGroupsOfStages) {
  // Megatron-LM: groups of p microbatches go through chunk 0, then chunk 1;
  // backwards visit the chunks in reverse.
  EXPECT_EQ(order(ScheduleKind::Interleaved, 2, 0, 4, 2),
            "F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3 ");
  auto bad = pipelineOrder(ScheduleKind::Interleaved, 4, 0, 6, 2);
  EXPECT_FALSE(bad.ok());
}

TEST(PipelineOrder, InFlightActivations) {
  // 1F1B holds at most p - s microbatches; GPipe holds all of them.
  EXPECT_EQ(peakInFlight(*pipelineOrder(ScheduleKind::OneFOneB, 4, 0, 8)), 4);
  EXPECT_EQ(peakInFlight(*pipelineOrder(ScheduleKind::OneFOneB, 4, 3, 8)), 1);
  EXPECT_EQ(peakInFlight(*pipelineOrder(ScheduleKind::GPipe, 4, 3, 8)), 8);
  // ZB-H1 keeps 1F1B's activations; deferred weight gradients pile up on
  // the first stage only.
  auto zb = *pipelineOrder(ScheduleKind::ZeroBubbleH1, 4, 0, 8);
  EXPECT_EQ(peakInFlight(zb), 4);
  EXPECT_EQ(peakPendingWeightGrads(zb), 4);
  EXPECT_EQ(peakPendingWeightGrads(*pipelineOrder(ScheduleKind::ZeroBubbleH1,
                                                  4, 3, 8)),
            1);
}

TEST(PipelineOrder, StashFramesByClassesOfChunks) {
  // Interleaved, 2 stages, 4 microbatches, 2 chunks ("F0 F1 F0.1 F1.1 F2
  // B0.1 F3 B1.1 ..."): stage 0 holds five chunk-microbatches at once, at
  // most four of chunk 0 and two of chunk 1. Equal stashes share one class
  // (five frames); a chunk with a far larger stash (a head) gets a class of its
  // own, so that it does not size every frame.
  auto order = *pipelineOrder(ScheduleKind::Interleaved, 2, 0, 4, 2);
  StashFrames same = planStashFrames(order, {10, 10});
  ASSERT_EQ(same.frames.size(), 1u);
  EXPECT_EQ(same.frames[0], 5);
  EXPECT_DOUBLE_EQ(same.bytes, 50);
  StashFrames uneven = planStashFrames(order, {10, 100});
  ASSERT_EQ(uneven.frames.size(), 2u);
  EXPECT_NE(uneven.classOf[0], uneven.classOf[1]);
  EXPECT_EQ(uneven.frames[uneven.classOf[0]], 4);
  EXPECT_EQ(uneven.frames[uneven.classOf[1]], 2);
  EXPECT_DOUBLE_EQ(uneven.bytes, 4 * 10 + 2 * 100);
  // One chunk: the stage's peak in flight, whatever the schedule.
  auto oneF = *pipelineOrder(ScheduleKind::OneFOneB, 4, 1, 8);
  EXPECT_DOUBLE_EQ(planStashFrames(oneF, {7}).bytes, 7 * peakInFlight(oneF));
}

PipelineSpec uniform(ScheduleKind kind, int stages, int m, double f, double b,
                     double w = 0) {
  PipelineSpec spec;
  spec.schedule = kind;
  spec.microbatches = m;
  for (int s = 0; s < stages; ++s) {
    ChunkCosts c;
    c.forward = f;
    c.backward = b;
    c.weightGrad = w;
    spec.stages.push_back({{c}, 0.0});
  }
  return spec;
}

Timeline run(const PipelineSpec &spec, TaskGraph *out = nullptr) {
  auto g = buildPipelineTasks(spec);
  EXPECT_TRUE(g.ok()) << g.status();
  auto tl = simulate(*g);
  EXPECT_TRUE(tl.ok()) << tl.status();
  if (out)
    *out = *g;
  return *tl;
}

double endOf(const TaskGraph &g, const Timeline &tl, int rank,
             const std::string &name) {
  for (int i = 0; i < g.size(); ++i)
    if (g.tasks()[i].rank == rank && g.tasks()[i].name == name)
      return tl.end[i];
  ADD_FAILURE() << "no task " << name << " on rank " << rank;
  return -1;
}

TEST(Simulator, OneFOneBMatchesHandDrawnTimeline) {
  // Two stages, two microbatches, F = 1, B = 2, free transfers:
  //   stage 0: F0 [0,1] F1 [1,2] ......... B0 [4,6] ... B1 [7,9]
  //   stage 1: ...... F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7]
  TaskGraph g;
  Timeline tl = run(uniform(ScheduleKind::OneFOneB, 2, 2, 1, 2), &g);
  EXPECT_DOUBLE_EQ(tl.makespan, 9);
  EXPECT_DOUBLE_EQ(endOf(g, tl, 1, "B0"), 4);
  EXPECT_DOUBLE_EQ(endOf(g, tl, 1, "F1"), 5);
  EXPECT_DOUBLE_EQ(endOf(g, tl, 0, "B0"), 6);
  EXPECT_DOUBLE_EQ(endOf(g, tl, 0, "B1"), 9);
  // Each stage computes 6 of the 9 seconds: (p-1)/(m+p-1) = 1/3 idle.
  EXPECT_NEAR(tl.bubbleFraction, 1.0 / 3, 1e-12);
}

TEST(Simulator, PipelineBubbleFollowsTheClassicFormula) {
  // 1F1B with uniform stages: step = (m + p - 1) (F + B), so the first
  // stage idles (p - 1) / (m + p - 1) of the step.
  for (int p : {2, 4, 8}) {
    for (int m : {1, 4, 16}) {
      Timeline tl = run(uniform(ScheduleKind::OneFOneB, p, m, 1, 2));
      EXPECT_DOUBLE_EQ(tl.makespan, (m + p - 1) * 3.0) << p << " " << m;
    }
  }
}

TEST(Simulator, TransfersDelayTheNextStage) {
  PipelineSpec spec = uniform(ScheduleKind::GPipe, 2, 1, 1, 2);
  spec.stages[0].chunks[0].sendForward = 0.5;
  spec.stages[1].chunks[0].sendBackward = 0.25;
  // F0 [0,1], send .5, F0' [1.5,2.5], B0' [2.5,4.5], send .25, B0 [4.75,6.75]
  EXPECT_DOUBLE_EQ(run(spec).makespan, 6.75);
}

TEST(Simulator, GradientReductionOverlapsTheLastBackward) {
  // One stage, one microbatch: F [0,1], B in two halves [1,2] [2,3]; the
  // bucket reductions of 1 s each run [2,3] and [3,4], then the optimizer
  // (0.5) [4,4.5]. Without overlap the step would take 5.5.
  PipelineSpec spec = uniform(ScheduleKind::OneFOneB, 1, 1, 1, 2);
  spec.stages[0].chunks[0].gradReduce = 2;
  spec.stages[0].chunks[0].gradBuckets = 2;
  spec.stages[0].optimizer = 0.5;
  EXPECT_DOUBLE_EQ(run(spec).makespan, 4.5);
}

TEST(Simulator, ParameterGatherFollowsTheOptimizer) {
  // ZeRO-1: F [0,1], B [1,3], the reduce-scatter (1 s, one bucket) [3,4],
  // the optimizer on the shard (0.5) [4,4.5], then the gather of the
  // updated shards (0.75) [4.5,5.25]: it needs the update, so nothing
  // hides it.
  PipelineSpec spec = uniform(ScheduleKind::OneFOneB, 1, 1, 1, 2);
  spec.stages[0].chunks[0].gradReduce = 1;
  spec.stages[0].optimizer = 0.5;
  spec.stages[0].paramGather = 0.75;
  TaskGraph g;
  Timeline tl = run(spec, &g);
  EXPECT_DOUBLE_EQ(tl.makespan, 5.25);
  EXPECT_DOUBLE_EQ(endOf(g, tl, 0, "optimizer"), 4.5);
  EXPECT_DOUBLE_EQ(endOf(g, tl, 0, "parameter gather"), 5.25);
}

TEST(Simulator, ZeroBubbleShortensTheStep) {
  // Backward 2 = input gradient 1 + weight gradient 1.
  double oneF = run(uniform(ScheduleKind::OneFOneB, 4, 8, 1, 2, 1)).makespan;
  double zb = run(uniform(ScheduleKind::ZeroBubbleH1, 4, 8, 1, 2, 1)).makespan;
  EXPECT_DOUBLE_EQ(oneF, (8 + 3) * 3.0);
  EXPECT_LT(zb, oneF);
  // Every stage still does 8 * 3 seconds of work.
  EXPECT_GE(zb, 8 * 3.0);
}

TEST(Simulator, InterleavingShrinksTheBubble) {
  // The same model on 2 stages, as 1 chunk of cost (1, 2) or 2 chunks of
  // (0.5, 1): interleaving divides the bubble by the chunk count.
  double plain = run(uniform(ScheduleKind::OneFOneB, 2, 4, 1, 2)).makespan;
  PipelineSpec spec;
  spec.schedule = ScheduleKind::Interleaved;
  spec.microbatches = 4;
  for (int s = 0; s < 2; ++s) {
    ChunkCosts c;
    c.forward = 0.5;
    c.backward = 1;
    spec.stages.push_back({{c, c}, 0.0});
  }
  double interleaved = run(spec).makespan;
  EXPECT_DOUBLE_EQ(plain, (4 + 1) * 3.0);
  EXPECT_LT(interleaved, plain);
}

TEST(Simulator, DeadlockIsReported) {
  // Rank 0 runs "wait" before "produce" on one stream, but "wait" needs
  // "produce": a schedule that can never run.
  TaskGraph g;
  Task wait{"wait", "forward", 0, Stream::Compute, 1.0, {1}};
  Task produce{"produce", "forward", 0, Stream::Compute, 1.0, {}};
  g.add(wait);
  g.add(produce);
  auto tl = simulate(g);
  ASSERT_FALSE(tl.ok());
  EXPECT_NE(tl.status().message().find("deadlocks"), std::string::npos);
}

TEST(Simulator, BusySpansMergeTheStreamsOfARank) {
  // Rank 0 computes [0, 2) and reduces [1, 3) beside it, then computes
  // [3, 4) after the reduction: busy [0, 4) in one span. Rank 1 computes
  // [2, 3) after rank 0's first pass: one span, idle before.
  TaskGraph g;
  g.add(Task{"f", "forward", 0, Stream::Compute, 2.0, {}});
  g.add(Task{"late", "forward", 0, Stream::PipelineSend, 1.0, {}});
  g.add(Task{"reduce", "grad-reduce", 0, Stream::DataParallelComm, 2.0, {1}});
  g.add(Task{"b", "backward", 0, Stream::Compute, 1.0, {2}});
  g.add(Task{"g", "forward", 1, Stream::Compute, 1.0, {0}});
  auto tl = simulate(g);
  ASSERT_TRUE(tl.ok()) << tl.status();
  std::vector<std::vector<Span>> spans = busySpans(g, *tl);
  ASSERT_EQ(spans.size(), 2u);
  ASSERT_EQ(spans[0].size(), 1u);
  EXPECT_DOUBLE_EQ(spans[0][0].start, 0.0);
  EXPECT_DOUBLE_EQ(spans[0][0].end, 4.0);
  ASSERT_EQ(spans[1].size(), 1u);
  EXPECT_DOUBLE_EQ(spans[1][0].start, 2.0);
  EXPECT_DOUBLE_EQ(spans[1][0].end, 3.0);
}

TEST(Simulator, ChromeTraceHasOneEventPerTask) {
  TaskGraph g;
  Timeline tl = run(uniform(ScheduleKind::OneFOneB, 2, 2, 1, 2), &g);
  std::ostringstream os;
  writeChromeTrace(g, tl, os);
  std::string json = os.str();
  size_t events = 0;
  for (size_t at = json.find("\"ph\": \"X\""); at != std::string::npos;
       at = json.find("\"ph\": \"X\"", at + 1))
    ++events;
  EXPECT_EQ(events, static_cast<size_t>(g.size()));
  EXPECT_NE(json.find("\"name\": \"rank 1\""), std::string::npos);
  EXPECT_NE(json.find("\"ts\": 4000000.000"), std::string::npos);
}

} // namespace
