//===- TestPlans.cpp - Plans built by hand for tests ----------------------===//

#include "TestPlans.h"

#include "cleave/runtime/plan/PlanIO.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace cleave::plan::testing {

namespace {

void setDims(google::protobuf::RepeatedPtrField<DimSharding> *out,
             const std::vector<std::vector<std::string>> &dims) {
  for (const auto &axes : dims) {
    DimSharding *dim = out->Add();
    for (const std::string &axis : axes)
      dim->add_axes(axis);
  }
}

int addParam(Plan &plan, const std::string &name, std::vector<int64_t> shape,
             const std::vector<std::vector<std::string>> &dims,
             std::vector<int> stages, const std::string &zeroAxis = "",
             InitSpec::Kind init = InitSpec::NORMAL) {
  ParameterSharding *p = plan.add_parameters();
  p->set_name(name);
  for (int64_t d : shape)
    p->add_global_shape(d);
  setDims(p->mutable_dims(), dims);
  for (int s : stages)
    p->add_stages(s);
  p->mutable_init()->set_kind(init);
  p->mutable_init()->set_std(init == InitSpec::NORMAL ? 0.02 : 0);
  p->set_zero_axis(zeroAxis);
  return plan.parameters_size() - 1;
}

void setMesh(Plan &plan,
             const std::vector<std::pair<std::string, int64_t>> &axes) {
  for (const auto &[name, size] : axes) {
    MeshAxis *axis = plan.mutable_mesh()->add_axes();
    axis->set_name(name);
    axis->set_size(size);
  }
}

/// Ranks in row-major order over the mesh (first axis slowest); the program
/// of a rank is its coordinate on axis 0 ("pp"). Groups: one per axis and
/// coordinate of the other axes, as the runtime derives them.
void fillRanksAndGroups(Plan &plan, int devicesPerNode) {
  std::vector<int64_t> sizes;
  for (const MeshAxis &axis : plan.mesh().axes())
    sizes.push_back(axis.size());
  int64_t total = 1;
  for (int64_t s : sizes)
    total *= s;
  std::vector<std::vector<int64_t>> coords(total);
  for (int64_t r = 0; r < total; ++r) {
    int64_t rest = r;
    std::vector<int64_t> c(sizes.size());
    for (int a = static_cast<int>(sizes.size()) - 1; a >= 0; --a) {
      c[a] = rest % sizes[a];
      rest /= sizes[a];
    }
    coords[r] = c;
    RankAssignment *rank = plan.add_ranks();
    rank->set_rank(static_cast<int32_t>(r));
    rank->set_program(static_cast<int32_t>(c[0]));
    for (int64_t x : c)
      rank->add_coords(x);
    rank->set_node(static_cast<int32_t>(r / devicesPerNode));
    rank->set_local_device(static_cast<int32_t>(r % devicesPerNode));
  }
  for (size_t a = 0; a < sizes.size(); ++a) {
    // Key: the coordinates with axis a blanked out.
    std::map<std::vector<int64_t>, CommGroup *> groups;
    for (int64_t r = 0; r < total; ++r) {
      std::vector<int64_t> key = coords[r];
      key[a] = -1;
      CommGroup *&group = groups[key];
      if (!group) {
        group = plan.add_groups();
        group->add_axes(plan.mesh().axes(a).name());
      }
      group->add_ranks(static_cast<int32_t>(r));
    }
  }
}

/// 1F1B: warm-up forwards, then one forward and one backward in turn, then
/// the remaining backwards; STEP_BEGIN first and OPTIMIZER last.
void oneFOneB(ProgramBuilder &b, int stage, int pp, int microbatches,
              int stepBegin, int forward, int backward, int optimizer) {
  b.step(stepBegin, -1);
  int warm = std::min(pp - 1 - stage, microbatches);
  int f = 0, bw = 0;
  for (; f < warm; ++f)
    b.step(forward, f);
  while (f < microbatches) {
    b.step(forward, f++);
    b.step(backward, bw++);
  }
  while (bw < microbatches)
    b.step(backward, bw++);
  b.step(optimizer, -1);
}

void fillCommon(Plan &plan) {
  plan.set_format_version(kFormatVersion);
  plan.set_producer("cleave test");
}

} // namespace

Attr strAttr(const std::string &s) {
  Attr a;
  a.set_s(s);
  return a;
}
Attr intAttr(int64_t i) {
  Attr a;
  a.set_i(i);
  return a;
}
Attr boolAttr(bool b) {
  Attr a;
  a.set_b(b);
  return a;
}
Attr stringsAttr(std::initializer_list<std::string> values) {
  Attr a;
  for (const std::string &v : values)
    a.mutable_strings()->add_values(v);
  return a;
}

int ProgramBuilder::tensor(const std::string &name, TensorDecl::Kind kind,
                           std::vector<int64_t> shape, DType dtype, int slots,
                           int paramIndex) {
  TensorDecl *t = program->add_tensors();
  t->set_id(program->tensors_size() - 1);
  t->set_name(name);
  t->set_kind(kind);
  t->set_dtype(dtype);
  int64_t elements = 1;
  for (int64_t d : shape) {
    t->add_shape(d);
    elements *= d;
  }
  t->set_bytes(elements * dtypeBytes(dtype));
  t->set_slots(slots);
  t->set_slot_stride(t->bytes());
  t->set_offset(program->arena_bytes());
  t->set_param_index(paramIndex);
  t->set_seq_dim(-1);
  program->set_arena_bytes(program->arena_bytes() + t->bytes() * slots);
  return t->id();
}

int ProgramBuilder::segment(const std::string &name, Segment::Kind kind,
                            int chunk) {
  Segment *s = program->add_segments();
  s->set_name(name);
  s->set_kind(kind);
  s->set_chunk(chunk);
  return program->segments_size() - 1;
}

Instruction &ProgramBuilder::inst(int segment, const std::string &op,
                                  std::vector<int32_t> inputs,
                                  std::vector<int32_t> outputs,
                                  const std::string &location) {
  Instruction *i = program->mutable_segments(segment)->add_instructions();
  i->set_op(op);
  for (int32_t id : inputs)
    i->add_inputs(id);
  for (int32_t id : outputs)
    i->add_outputs(id);
  i->set_location(location);
  return *i;
}

void ProgramBuilder::step(int segment, int microbatch) {
  ScheduleStep *s = program->add_schedule();
  s->set_segment(segment);
  s->set_microbatch(microbatch);
}

void ProgramBuilder::finish() {
  std::map<TensorDecl::Kind, int64_t> bytes;
  for (const TensorDecl &t : program->tensors())
    bytes[t.kind()] += t.bytes() * std::max(1, t.slots());
  program->clear_memory();
  for (const auto &[kind, b] : bytes) {
    KindBytes *kb = program->add_memory();
    kb->set_kind(kind);
    kb->set_bytes(b);
  }
}

namespace {

/// AdamW states of parameter tensor `param` (global index `index`) and
/// their update in the optimizer segment.
void adamw(ProgramBuilder &b, int optimizer, int param, int grad, int index,
           const std::string &name, std::vector<int64_t> shape) {
  int m = b.tensor(name + ".exp_avg", TensorDecl::OPTIMIZER_STATE, shape, F32,
                   1, index);
  b.at(m).set_state("exp_avg");
  int v = b.tensor(name + ".exp_avg_sq", TensorDecl::OPTIMIZER_STATE, shape,
                   F32, 1, index);
  b.at(v).set_state("exp_avg_sq");
  Instruction &update = b.inst(optimizer, "graph.adamw_update",
                               {param, grad, m, v}, {param, m, v});
  (*update.mutable_attrs())["lr"] = [] {
    Attr a;
    a.set_f(1e-3);
    return a;
  }();
}

Instruction &allReduce(ProgramBuilder &b, int segment, int tensor,
                       std::initializer_list<std::string> axes) {
  Instruction &i = b.inst(segment, "comm.all_reduce", {tensor}, {tensor});
  (*i.mutable_attrs())["axes"] = stringsAttr(axes);
  (*i.mutable_attrs())["reduction"] = strAttr("sum");
  return i;
}

Instruction &sendRecv(ProgramBuilder &b, int segment, const std::string &op,
                      int tensor, int offset, int tag) {
  Instruction &i = op == "comm.send"
                       ? b.inst(segment, op, {tensor}, {})
                       : b.inst(segment, op, {}, {tensor});
  (*i.mutable_attrs())["axis"] = strAttr("pp");
  (*i.mutable_attrs())["offset"] = intAttr(offset);
  (*i.mutable_attrs())["tag"] = intAttr(tag);
  return i;
}

void buildStage0(Plan &plan) {
  Program *program = plan.add_programs();
  program->set_id(0);
  program->set_name("stage0");
  program->set_stage(0);
  ProgramBuilder b(program);
  int tokens = b.tensor("tokens", TensorDecl::INPUT, {2, 4}, I64, 2);
  b.at(tokens).set_input_name("tokens");
  b.at(tokens).set_batch_dim(0);
  int wte = b.tensor("wte", TensorDecl::PARAMETER, {8, 8}, F32, 1, 0);
  setDims(b.at(wte).mutable_dims(), {{"tp"}, {}});
  int fc = b.tensor("h.0.mlp.fc.weight", TensorDecl::PARAMETER, {8, 16}, F32,
                    1, 1);
  setDims(b.at(fc).mutable_dims(), {{}, {"tp"}});
  int proj = b.tensor("h.0.mlp.proj.weight", TensorDecl::PARAMETER, {16, 8},
                      F32, 1, 2);
  setDims(b.at(proj).mutable_dims(), {{"tp"}, {}});
  int x = b.tensor("%x", TensorDecl::TRANSIENT, {2, 4, 8});
  int h = b.tensor("%h", TensorDecl::STASH, {2, 4, 16}, F32, 2);
  int y = b.tensor("%y", TensorDecl::TRANSIENT, {2, 4, 8});
  int sendAct = b.tensor("send.act", TensorDecl::COMM_BUFFER, {2, 4, 8}, F32,
                         2);
  int recvGrad = b.tensor("recv.grad", TensorDecl::COMM_BUFFER, {2, 4, 8},
                          F32, 2);
  int gWte = b.tensor("wte.grad", TensorDecl::GRADIENT, {8, 8}, F32, 1, 0);
  int gFc = b.tensor("h.0.mlp.fc.weight.grad", TensorDecl::GRADIENT, {8, 16},
                     F32, 1, 1);
  int gProj = b.tensor("h.0.mlp.proj.weight.grad", TensorDecl::GRADIENT,
                       {16, 8}, F32, 1, 2);
  int dh = b.tensor("%dh", TensorDecl::TRANSIENT, {2, 4, 16});
  int dx = b.tensor("%dx", TensorDecl::TRANSIENT, {2, 4, 8});

  int begin = b.segment("step_begin", Segment::STEP_BEGIN);
  int fwd = b.segment("forward", Segment::FORWARD);
  int bwd = b.segment("backward", Segment::BACKWARD);
  int opt = b.segment("optimizer", Segment::OPTIMIZER);

  b.inst(begin, "runtime.zero", {}, {gWte, gFc, gProj});

  b.inst(fwd, "graph.gather", {wte, tokens}, {x}, "loc(\"wte\")");
  allReduce(b, fwd, x, {"tp"});
  b.inst(fwd, "graph.matmul", {x, fc}, {h}, "loc(\"h.0.mlp.fc\")");
  b.inst(fwd, "graph.matmul", {h, proj}, {y}, "loc(\"h.0.mlp.proj\")");
  allReduce(b, fwd, y, {"tp"});
  b.inst(fwd, "runtime.copy", {y}, {sendAct});
  sendRecv(b, fwd, "comm.send", sendAct, 1, 0).set_async_handle(0);
  (*b.inst(fwd, "comm.wait", {}, {}).mutable_attrs())["handle"] = intAttr(0);

  sendRecv(b, bwd, "comm.recv", recvGrad, -1, 1);
  Instruction &dProj = b.inst(bwd, "graph.matmul", {recvGrad, proj}, {dh},
                              "loc(\"h.0.mlp.proj\")");
  (*dProj.mutable_attrs())["transpose_rhs"] = boolAttr(true);
  Instruction &wProj = b.inst(bwd, "graph.matmul", {h, recvGrad}, {gProj});
  (*wProj.mutable_attrs())["transpose_lhs"] = boolAttr(true);
  (*wProj.mutable_attrs())["accumulate"] = boolAttr(true);
  Instruction &dFc = b.inst(bwd, "graph.matmul", {dh, fc}, {dx});
  (*dFc.mutable_attrs())["transpose_rhs"] = boolAttr(true);
  Instruction &wFc = b.inst(bwd, "graph.matmul", {x, dh}, {gFc});
  (*wFc.mutable_attrs())["transpose_lhs"] = boolAttr(true);
  allReduce(b, bwd, dx, {"tp"});
  Instruction &gather = b.inst(bwd, "graph.gather_grad", {dx, tokens}, {gWte});
  (*gather.mutable_attrs())["num_rows"] = intAttr(8);

  // The embedding is tied to the head on the last stage: their gradients
  // are summed over the pipeline before the update.
  allReduce(b, opt, gWte, {"pp"});
  adamw(b, opt, wte, gWte, 0, "wte", {8, 8});
  adamw(b, opt, fc, gFc, 1, "h.0.mlp.fc.weight", {8, 16});
  adamw(b, opt, proj, gProj, 2, "h.0.mlp.proj.weight", {16, 8});

  oneFOneB(b, 0, 2, 2, begin, fwd, bwd, opt);
  b.finish();
}

void buildStage1(Plan &plan) {
  Program *program = plan.add_programs();
  program->set_id(1);
  program->set_name("stage1");
  program->set_stage(1);
  ProgramBuilder b(program);
  int recvAct = b.tensor("recv.act", TensorDecl::COMM_BUFFER, {2, 4, 8}, F32,
                         2);
  int labels = b.tensor("labels", TensorDecl::INPUT, {2, 4}, I64, 2);
  b.at(labels).set_input_name("labels");
  b.at(labels).set_batch_dim(0);
  int fc = b.tensor("h.1.mlp.fc.weight", TensorDecl::PARAMETER, {8, 16}, F32,
                    1, 3);
  setDims(b.at(fc).mutable_dims(), {{}, {"tp"}});
  int proj = b.tensor("h.1.mlp.proj.weight", TensorDecl::PARAMETER, {16, 8},
                      F32, 1, 4);
  setDims(b.at(proj).mutable_dims(), {{"tp"}, {}});
  int lnf = b.tensor("ln_f.weight", TensorDecl::PARAMETER, {8}, F32, 1, 5);
  int wte = b.tensor("wte", TensorDecl::PARAMETER, {8, 8}, F32, 1, 0);
  setDims(b.at(wte).mutable_dims(), {{"tp"}, {}});
  int h = b.tensor("%h", TensorDecl::STASH, {2, 4, 16}, F32, 2);
  int y = b.tensor("%y", TensorDecl::STASH, {2, 4, 8}, F32, 2);
  int xn = b.tensor("%xn", TensorDecl::TRANSIENT, {2, 4, 8});
  int logits = b.tensor("%logits", TensorDecl::TRANSIENT, {2, 4, 8});
  int loss = b.tensor("%loss", TensorDecl::TRANSIENT, {});
  int sendGrad = b.tensor("send.grad", TensorDecl::COMM_BUFFER, {2, 4, 8},
                          F32, 2);
  int gFc = b.tensor("h.1.mlp.fc.weight.grad", TensorDecl::GRADIENT, {8, 16},
                     F32, 1, 3);
  int gProj = b.tensor("h.1.mlp.proj.weight.grad", TensorDecl::GRADIENT,
                       {16, 8}, F32, 1, 4);
  int gLnf = b.tensor("ln_f.weight.grad", TensorDecl::GRADIENT, {8}, F32, 1,
                      5);
  int gWte = b.tensor("wte.grad", TensorDecl::GRADIENT, {8, 8}, F32, 1, 0);
  int dLogits = b.tensor("%dlogits", TensorDecl::TRANSIENT, {2, 4, 8});
  int dy = b.tensor("%dy", TensorDecl::TRANSIENT, {2, 4, 8});
  int dh = b.tensor("%dh", TensorDecl::TRANSIENT, {2, 4, 16});
  int scale = b.tensor("loss_scale", TensorDecl::CONSTANT, {});
  float half = 0.5f;
  b.at(scale).set_constant_value(std::string(
      reinterpret_cast<const char *>(&half), sizeof(half)));
  program->set_loss_tensor(loss);

  int begin = b.segment("step_begin", Segment::STEP_BEGIN);
  int fwd = b.segment("forward", Segment::FORWARD);
  int bwd = b.segment("backward", Segment::BACKWARD);
  int opt = b.segment("optimizer", Segment::OPTIMIZER);

  b.inst(begin, "runtime.zero", {}, {gFc, gProj, gLnf, gWte});

  sendRecv(b, fwd, "comm.recv", recvAct, -1, 0);
  b.inst(fwd, "graph.matmul", {recvAct, fc}, {h}, "loc(\"h.1.mlp.fc\")");
  b.inst(fwd, "graph.matmul", {h, proj}, {y}, "loc(\"h.1.mlp.proj\")");
  allReduce(b, fwd, y, {"tp"});
  Instruction &ln = b.inst(fwd, "graph.rms_norm", {y, lnf, -1}, {xn});
  Attr eps;
  eps.set_f(1e-5);
  (*ln.mutable_attrs())["eps"] = eps;
  Instruction &head = b.inst(fwd, "graph.matmul", {xn, wte}, {logits});
  (*head.mutable_attrs())["transpose_rhs"] = boolAttr(true);
  b.inst(fwd, "graph.cross_entropy", {logits, labels}, {loss});

  b.inst(bwd, "graph.cross_entropy_grad", {logits, labels, scale}, {dLogits});
  b.inst(bwd, "graph.matmul", {dLogits, wte}, {dy});
  allReduce(b, bwd, dy, {"tp"});
  Instruction &dProj = b.inst(bwd, "graph.matmul", {dy, proj}, {dh});
  (*dProj.mutable_attrs())["transpose_rhs"] = boolAttr(true);
  b.inst(bwd, "runtime.copy", {dy}, {sendGrad});
  sendRecv(b, bwd, "comm.send", sendGrad, -1, 1);

  allReduce(b, opt, gWte, {"pp"});
  adamw(b, opt, fc, gFc, 3, "h.1.mlp.fc.weight", {8, 16});
  adamw(b, opt, proj, gProj, 4, "h.1.mlp.proj.weight", {16, 8});
  adamw(b, opt, lnf, gLnf, 5, "ln_f.weight", {8});
  adamw(b, opt, wte, gWte, 0, "wte", {8, 8});

  oneFOneB(b, 1, 2, 2, begin, fwd, bwd, opt);
  b.finish();
}

void addStage(Plan &plan, int stage, int64_t firstLayer, int64_t numLayers,
              bool embedding, bool head, double peak) {
  StageInfo *s = plan.add_stages();
  s->set_stage(stage);
  s->set_first_layer(firstLayer);
  s->set_num_layers(numLayers);
  s->set_has_embedding(embedding);
  s->set_has_head(head);
  for (const RankAssignment &r : plan.ranks())
    if (r.program() == stage)
      s->add_ranks(r.rank());
  s->set_predicted_peak_bytes(peak);
  (*s->mutable_predicted_memory())["parameters"] = peak * 0.25;
  (*s->mutable_predicted_memory())["gradients"] = peak * 0.25;
  (*s->mutable_predicted_memory())["optimizer"] = peak * 0.3;
  (*s->mutable_predicted_memory())["activations"] = peak * 0.2;
  if (stage < plan.programs_size())
    s->set_planned_arena_bytes(plan.programs(stage).arena_bytes());
}

void addComm(Plan &plan, const std::string &kind, const std::string &link,
             double bytes, int64_t count) {
  CommVolume *v = plan.mutable_predicted()->add_comm();
  v->set_kind(kind);
  v->set_link(link);
  v->set_bytes(bytes);
  v->set_count(count);
}

} // namespace

Plan makeTwoStagePlan() {
  Plan plan;
  fillCommon(plan);
  ModelIdentity *model = plan.mutable_model();
  model->set_source("zoo:gpt,layers=2,hidden=8,vocab=16,seq=4");
  model->set_name("gpt");
  model->set_num_parameters(16 * 8 + 2 * (8 * 32 + 32 * 8) + 8);
  model->set_graph_hash("0123456789abcdef");
  ClusterInfo *cluster = plan.mutable_cluster();
  cluster->set_spec("cpu-local,devices=4");
  cluster->set_device_kind("cpu");
  cluster->set_nodes(1);
  cluster->set_devices_per_node(4);
  cluster->set_peak_flops(1e11);
  cluster->set_memory_bytes(16.0 * (1 << 30));
  setMesh(plan, {{"pp", 2}, {"tp", 2}});
  Knobs *k = plan.mutable_knobs();
  k->set_dp(1);
  k->set_tp(2);
  k->set_pp(2);
  k->set_cp(1);
  k->set_ep(1);
  k->set_microbatch_size(2);
  k->set_num_microbatches(2);
  k->set_schedule("1f1b");
  k->set_virtual_stages(1);
  k->set_recompute("none");
  k->set_precision("fp32");
  k->set_text("dp=1,tp=2,pp=2,cp=1,ep=1,sp=off,zero=0,microbatch=2,"
              "schedule=1f1b,recompute=none,precision=fp32");
  TrainingConfig *t = plan.mutable_training();
  t->set_global_batch(4);
  t->set_seq_len(4);
  t->set_optimizer("adamw");
  t->set_lr(1e-3);
  t->set_beta1(0.9);
  t->set_beta2(0.95);
  t->set_eps(1e-8);
  t->set_weight_decay(0.1);
  t->set_seed(42);
  t->set_flops_per_step(6.0 * 16 * 1168);
  t->set_tokens_per_step(16);

  addParam(plan, "wte", {16, 8}, {{"tp"}, {}}, {0, 1});
  addParam(plan, "h.0.mlp.fc.weight", {8, 32}, {{}, {"tp"}}, {0});
  addParam(plan, "h.0.mlp.proj.weight", {32, 8}, {{"tp"}, {}}, {0});
  addParam(plan, "h.1.mlp.fc.weight", {8, 32}, {{}, {"tp"}}, {1});
  addParam(plan, "h.1.mlp.proj.weight", {32, 8}, {{"tp"}, {}}, {1});
  addParam(plan, "ln_f.weight", {8}, {{}}, {1}, "", InitSpec::ONES);

  buildStage0(plan);
  buildStage1(plan);
  fillRanksAndGroups(plan, 4);
  addStage(plan, 0, 0, 1, true, false, 4096);
  addStage(plan, 1, 1, 1, false, true, 5120);

  PredictedMetrics *m = plan.mutable_predicted();
  m->set_step_time_s(0.0125);
  m->set_tflops_per_device(0.004);
  m->set_mfu(0.04);
  m->set_bubble_fraction(1.0 / 3);
  m->set_tokens_per_s(1280);
  m->add_peak_memory_per_stage(4096);
  m->add_peak_memory_per_stage(5120);
  addComm(plan, "all_reduce", "shm", 3072, 10);
  addComm(plan, "send", "shm", 512, 2);
  m->add_explanation("bounded by compute on stage 1 (head and loss)");
  m->add_explanation("pipeline bubble 33% with 2 microbatches on 2 stages");

  plan.set_partitioned_mlir("module {\n  func.func @stage0_forward() {\n"
                            "    return\n  }\n}\n");
  plan.set_simulated_trace("{\"traceEvents\": []}");
  return plan;
}

Plan makeLargePlan(int layers, int pp, int dp, int tp, int microbatches) {
  const int64_t hidden = 12288, vocab = 51200, seq = 2048, mb = 1;
  Plan plan;
  fillCommon(plan);
  plan.mutable_model()->set_source("zoo:gpt3-175b");
  plan.mutable_model()->set_name("gpt");
  plan.mutable_model()->set_num_parameters(175000000000ull);
  plan.mutable_cluster()->set_spec(
      absl::StrCat("dgx-a100-80g,nodes=", pp * dp * tp / 8));
  plan.mutable_cluster()->set_device_kind("a100-80g");
  plan.mutable_cluster()->set_nodes(pp * dp * tp / 8);
  plan.mutable_cluster()->set_devices_per_node(8);
  plan.mutable_cluster()->set_peak_flops(312e12);
  plan.mutable_cluster()->set_memory_bytes(80e9);
  setMesh(plan, {{"pp", pp}, {"dp", dp}, {"tp", tp}});
  Knobs *k = plan.mutable_knobs();
  k->set_dp(dp);
  k->set_tp(tp);
  k->set_pp(pp);
  k->set_cp(1);
  k->set_ep(1);
  k->set_zero(1);
  k->set_microbatch_size(mb);
  k->set_num_microbatches(microbatches);
  k->set_schedule("1f1b");
  k->set_recompute("full");
  k->set_precision("bf16");
  plan.mutable_training()->set_global_batch(dp * microbatches * mb);
  plan.mutable_training()->set_seq_len(seq);
  plan.mutable_training()->set_optimizer("adamw");

  struct LayerParam {
    const char *name;
    int64_t rows, cols;
    int splitDim;
  };
  const LayerParam layerParams[] = {
      {"attn.qkv.weight", hidden, 3 * hidden, 1},
      {"attn.proj.weight", hidden, hidden, 0},
      {"mlp.fc.weight", hidden, 4 * hidden, 1},
      {"mlp.proj.weight", 4 * hidden, hidden, 0}};
  int perStage = layers / pp;
  addParam(plan, "wte", {vocab, hidden}, {{"tp"}, {}}, {0, pp - 1}, "dp");
  for (int l = 0; l < layers; ++l)
    for (const LayerParam &p : layerParams) {
      std::vector<std::vector<std::string>> dims(2);
      dims[p.splitDim] = {"tp"};
      addParam(plan, absl::StrCat("h.", l, ".", p.name), {p.rows, p.cols},
               dims, {l / perStage}, "dp");
    }
  addParam(plan, "ln_f.weight", {hidden}, {{}}, {pp - 1}, "dp",
           InitSpec::ONES);

  for (int s = 0; s < pp; ++s) {
    Program *program = plan.add_programs();
    program->set_id(s);
    program->set_name(absl::StrCat("stage", s));
    program->set_stage(s);
    ProgramBuilder b(program);
    int begin = b.segment("step_begin", Segment::STEP_BEGIN);
    int fwd = b.segment("forward", Segment::FORWARD);
    int bwd = b.segment("backward", Segment::BACKWARD);
    int opt = b.segment("optimizer", Segment::OPTIMIZER);
    int act = b.tensor(s == 0 ? "tokens" : "recv.act",
                       s == 0 ? TensorDecl::INPUT : TensorDecl::COMM_BUFFER,
                       {mb, seq, hidden}, BF16, 2);
    int grad = b.tensor("recv.grad", TensorDecl::COMM_BUFFER,
                        {mb, seq, hidden}, BF16, 2);
    if (s > 0)
      sendRecv(b, fwd, "comm.recv", act, -1, 0);
    if (s < pp - 1)
      sendRecv(b, bwd, "comm.recv", grad, 1, 1);
    for (int l = s * perStage; l < (s + 1) * perStage; ++l) {
      int x = b.tensor(absl::StrCat("h.", l, ".in"), TensorDecl::STASH,
                       {mb, seq, hidden}, BF16, pp - s);
      for (size_t i = 0; i < 4; ++i) {
        const LayerParam &p = layerParams[i];
        int index = 1 + 4 * l + static_cast<int>(i);
        std::vector<int64_t> local = {p.rows, p.cols};
        local[p.splitDim] /= tp;
        std::string name = absl::StrCat("h.", l, ".", p.name);
        int w = b.tensor(name, TensorDecl::PARAMETER, local, BF16, 1, index);
        int g = b.tensor(name + ".grad", TensorDecl::GRADIENT, local, BF16, 1,
                         index);
        int out = b.tensor(absl::StrCat("%", name, ".out"),
                           TensorDecl::TRANSIENT,
                           {mb, seq, p.splitDim == 1 ? p.cols / tp : p.cols},
                           BF16);
        b.inst(fwd, "graph.matmul", {x, w}, {out}, "loc(\"" + name + "\")");
        if (p.splitDim == 0)
          allReduce(b, fwd, out, {"tp"});
        Instruction &dw = b.inst(bwd, "graph.matmul", {x, grad}, {g});
        (*dw.mutable_attrs())["transpose_lhs"] = boolAttr(true);
        Instruction &dx = b.inst(bwd, "graph.matmul", {grad, w}, {out});
        (*dx.mutable_attrs())["transpose_rhs"] = boolAttr(true);
        if (p.splitDim == 1)
          allReduce(b, bwd, out, {"tp"});
        b.inst(begin, "runtime.zero", {}, {g});
        allReduce(b, opt, g, {"dp"});
        adamw(b, opt, w, g, index, name, local);
      }
    }
    if (s < pp - 1)
      sendRecv(b, fwd, "comm.send", act, 1, 0);
    if (s > 0)
      sendRecv(b, bwd, "comm.send", grad, -1, 1);
    oneFOneB(b, s, pp, microbatches, begin, fwd, bwd, opt);
    b.finish();
  }
  fillRanksAndGroups(plan, 8);
  for (int s = 0; s < pp; ++s)
    addStage(plan, s, s * perStage, perStage, s == 0, s == pp - 1, 60e9);
  plan.mutable_predicted()->set_step_time_s(12.5);
  plan.mutable_predicted()->set_mfu(0.45);
  addComm(plan, "all_reduce", "nvlink", 1e11, 2000);
  addComm(plan, "all_reduce", "network", 5e9, 24);
  addComm(plan, "send", "network", 1e9, 384);
  return plan;
}

} // namespace cleave::plan::testing
