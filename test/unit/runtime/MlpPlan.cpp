//===- MlpPlan.cpp - A hand-built plan of a 2-layer MLP for the tests -----===//

#include "MlpPlan.h"

#include "cleave/runtime/plan/PlanIO.h"

#include <algorithm>

namespace cleave::test {

namespace {

using plan::Instruction;
using plan::Program;
using plan::TensorDecl;

class Builder {
public:
  explicit Builder(Program &program) : program_(program) {}

  int32_t tensor(const std::string &name, std::vector<int64_t> shape,
                 TensorDecl::Kind kind, plan::DType dtype = plan::F32,
                 int slots = 1) {
    TensorDecl *t = program_.add_tensors();
    t->set_id(program_.tensors_size() - 1);
    t->set_name(name);
    t->set_dtype(dtype);
    int64_t n = 1;
    for (int64_t d : shape) {
      t->add_shape(d);
      n *= d;
    }
    t->set_kind(kind);
    int64_t bytes = n * (dtype == plan::I64 ? 8 : 4);
    int64_t stride = (bytes + 63) / 64 * 64;
    t->set_offset(next_);
    t->set_bytes(bytes);
    t->set_slots(slots);
    t->set_slot_stride(slots > 1 ? stride : 0);
    next_ += stride * slots;
    program_.set_arena_bytes(next_);
    return t->id();
  }

  static void dims(TensorDecl &t, std::vector<std::string> perDim) {
    for (const std::string &axis : perDim) {
      plan::DimSharding *d = t.add_dims();
      if (!axis.empty())
        d->add_axes(axis);
    }
  }

private:
  Program &program_;
  int64_t next_ = 0;
};

Instruction *op(plan::Segment *segment, const std::string &name,
                std::vector<int32_t> inputs, std::vector<int32_t> outputs) {
  Instruction *inst = segment->add_instructions();
  inst->set_op(name);
  for (int32_t id : inputs)
    inst->add_inputs(id);
  for (int32_t id : outputs)
    inst->add_outputs(id);
  inst->set_location("loc(\"mlp." + name.substr(name.find('.') + 1) + "\")");
  return inst;
}

void setF(Instruction *inst, const std::string &name, double value) {
  (*inst->mutable_attrs())[name].set_f(value);
}
void setI(Instruction *inst, const std::string &name, int64_t value) {
  (*inst->mutable_attrs())[name].set_i(value);
}
void setB(Instruction *inst, const std::string &name) {
  (*inst->mutable_attrs())[name].set_b(true);
}
void setS(Instruction *inst, const std::string &name, const std::string &v) {
  (*inst->mutable_attrs())[name].set_s(v);
}
void setAxes(Instruction *inst, const std::string &axis) {
  (*inst->mutable_attrs())["axes"].mutable_strings()->add_values(axis);
}

/// Mesh, training config and the two parameters, shared by both plans.
void header(plan::Plan &p, const MlpPlanOptions &o) {
  p.set_format_version(plan::kFormatVersion);
  p.set_producer("cleave runtime tests");
  p.mutable_knobs()->set_dp(o.dp);
  p.mutable_knobs()->set_tp(o.tp);
  p.mutable_knobs()->set_num_microbatches(o.microbatches);
  plan::TrainingConfig *training = p.mutable_training();
  training->set_global_batch(o.batch);
  training->set_optimizer(o.optimizer);
  training->set_lr(o.lr);
  training->set_seed(1234);
  training->set_tokens_per_step(o.batch);
  training->set_flops_per_step(6.0 * o.batch * o.hidden * (o.in + o.classes));
  for (auto [name, rows, cols] :
       {std::tuple<const char *, int64_t, int64_t>{"w1", o.in, o.hidden},
        {"w2", o.hidden, o.classes}}) {
    plan::ParameterSharding *param = p.add_parameters();
    param->set_name(name);
    param->add_global_shape(rows);
    param->add_global_shape(cols);
    param->mutable_init()->set_kind(plan::InitSpec::NORMAL);
    param->mutable_init()->set_std(0.5);
  }
}

void schedule(Program &prog, int segment, int microbatch) {
  plan::ScheduleStep *s = prog.add_schedule();
  s->set_segment(segment);
  s->set_microbatch(microbatch);
}

plan::Segment *segment(Program &prog, const std::string &name,
                       plan::Segment::Kind kind) {
  plan::Segment *s = prog.add_segments();
  s->set_name(name);
  s->set_kind(kind);
  return s;
}

Instruction *sgd(plan::Segment *opt, int32_t w, int32_t g, int32_t m,
                 double lr) {
  Instruction *update = op(opt, "graph.sgd_update", {w, g, m}, {w, m});
  setF(update, "lr", lr);
  setF(update, "mu", 0.0);
  setF(update, "weight_decay", 0.0);
  return update;
}

} // namespace

plan::Plan buildMlpPipelinePlan(const MlpPlanOptions &o) {
  plan::Plan p;
  header(p, o);
  plan::MeshAxis *axis = p.mutable_mesh()->add_axes();
  axis->set_name("pp");
  axis->set_size(2);
  for (int r = 0; r < 2; ++r) {
    plan::RankAssignment *rank = p.add_ranks();
    rank->set_rank(r);
    rank->set_program(r);
    rank->add_coords(r);
  }
  int m = static_cast<int>(o.microbatches);
  int64_t rows = o.batch / o.microbatches, h = o.hidden, c = o.classes;

  // Stage 0: x -> W1 -> relu -> send; recv dact -> relu grad -> dW1.
  Program &s0 = *p.add_programs();
  s0.set_id(0);
  s0.set_name("stage0");
  s0.set_stage(0);
  Builder b0(s0);
  int32_t w1 = b0.tensor("w1", {o.in, h}, TensorDecl::PARAMETER);
  int32_t x = b0.tensor("x", {rows, o.in}, TensorDecl::INPUT, plan::F32, m);
  int32_t pre = b0.tensor("pre", {rows, h}, TensorDecl::STASH, plan::F32, m);
  int32_t act = b0.tensor("act", {rows, h}, TensorDecl::STASH, plan::F32, m);
  int32_t dact =
      b0.tensor("dact", {rows, h}, TensorDecl::COMM_BUFFER, plan::F32, m);
  int32_t dpre = b0.tensor("dpre", {rows, h}, TensorDecl::TRANSIENT);
  int32_t dw1 = b0.tensor("dw1", {o.in, h}, TensorDecl::TRANSIENT);
  int32_t g1 = b0.tensor("w1.grad", {o.in, h}, TensorDecl::GRADIENT);
  int32_t m1 = b0.tensor("w1.momentum", {o.in, h},
                         TensorDecl::OPTIMIZER_STATE);
  for (int32_t id : {w1, g1, m1})
    s0.mutable_tensors(id)->set_param_index(0);
  s0.mutable_tensors(m1)->set_state("momentum");
  s0.mutable_tensors(x)->set_input_name("pixels");
  s0.mutable_tensors(x)->set_seq_dim(-1);
  plan::Segment *f0 = segment(s0, "forward", plan::Segment::FORWARD);
  op(f0, "graph.matmul", {x, w1}, {pre});
  op(f0, "graph.relu", {pre}, {act});
  Instruction *send = op(f0, "comm.send", {act}, {});
  setS(send, "axis", "pp");
  setI(send, "offset", 1);
  setI(send, "tag", 0);
  if (o.bufferedSends)
    setB(send, "buffered");
  plan::Segment *bw0 = segment(s0, "backward", plan::Segment::BACKWARD);
  Instruction *recv = op(bw0, "comm.recv", {}, {dact});
  setS(recv, "axis", "pp");
  setI(recv, "offset", 1);
  setI(recv, "tag", 1);
  setS(op(bw0, "graph.activation_grad", {pre, dact}, {dpre}), "kind", "relu");
  setB(op(bw0, "graph.matmul", {x, dpre}, {dw1}), "transpose_lhs");
  op(bw0, "runtime.accumulate", {dw1}, {g1});
  sgd(segment(s0, "optimizer", plan::Segment::OPTIMIZER), w1, g1, m1, o.lr);

  // Stage 1: recv act -> W2 -> cross entropy; its backward sends dact.
  Program &s1 = *p.add_programs();
  s1.set_id(1);
  s1.set_name("stage1");
  s1.set_stage(1);
  Builder b1(s1);
  int32_t w2 = b1.tensor("w2", {h, c}, TensorDecl::PARAMETER);
  int32_t labels = b1.tensor("labels", {rows}, TensorDecl::INPUT, plan::I64, m);
  int32_t actIn =
      b1.tensor("act", {rows, h}, TensorDecl::COMM_BUFFER, plan::F32, m);
  int32_t logits =
      b1.tensor("logits", {rows, c}, TensorDecl::STASH, plan::F32, m);
  int32_t loss = b1.tensor("loss", {}, TensorDecl::STASH, plan::F32, m);
  int32_t dloss = b1.tensor("dloss", {}, TensorDecl::CONSTANT);
  int32_t dlogits = b1.tensor("dlogits", {rows, c}, TensorDecl::TRANSIENT);
  int32_t dw2 = b1.tensor("dw2", {h, c}, TensorDecl::TRANSIENT);
  // A buffered send's tensor stays in flight until the step ends: one slot
  // per microbatch.
  int32_t dactOut =
      b1.tensor("dact", {rows, h}, TensorDecl::COMM_BUFFER, plan::F32, m);
  int32_t g2 = b1.tensor("w2.grad", {h, c}, TensorDecl::GRADIENT);
  int32_t m2 = b1.tensor("w2.momentum", {h, c}, TensorDecl::OPTIMIZER_STATE);
  for (int32_t id : {w2, g2, m2})
    s1.mutable_tensors(id)->set_param_index(1);
  s1.mutable_tensors(m2)->set_state("momentum");
  s1.mutable_tensors(labels)->set_input_name("labels");
  s1.mutable_tensors(labels)->set_seq_dim(-1);
  s1.mutable_tensors(labels)->set_vocab(c);
  float scale = 1.0f / static_cast<float>(o.microbatches);
  s1.mutable_tensors(dloss)->set_constant_value(
      std::string(reinterpret_cast<const char *>(&scale), 4));
  s1.set_loss_tensor(loss);
  plan::Segment *f1 = segment(s1, "forward", plan::Segment::FORWARD);
  recv = op(f1, "comm.recv", {}, {actIn});
  setS(recv, "axis", "pp");
  setI(recv, "offset", -1);
  setI(recv, "tag", 0);
  op(f1, "graph.matmul", {actIn, w2}, {logits});
  op(f1, "graph.cross_entropy", {logits, labels}, {loss});
  plan::Segment *bw1 = segment(s1, "backward", plan::Segment::BACKWARD);
  op(bw1, "graph.cross_entropy_grad", {logits, labels, dloss}, {dlogits});
  setB(op(bw1, "graph.matmul", {actIn, dlogits}, {dw2}), "transpose_lhs");
  op(bw1, "runtime.accumulate", {dw2}, {g2});
  setB(op(bw1, "graph.matmul", {dlogits, w2}, {dactOut}), "transpose_rhs");
  send = op(bw1, "comm.send", {dactOut}, {});
  setS(send, "axis", "pp");
  setI(send, "offset", -1);
  setI(send, "tag", 1);
  if (o.bufferedSends)
    setB(send, "buffered");
  sgd(segment(s1, "optimizer", plan::Segment::OPTIMIZER), w2, g2, m2, o.lr);

  for (int stage = 0; stage < 2; ++stage) {
    Program &prog = stage == 0 ? s0 : s1;
    if (o.oneFOneB) {
      // Warm-up forwards (one per later stage), then alternate.
      int warmup = std::min(m, 1 - stage);
      int f = 0, b = 0;
      for (; f < warmup; ++f)
        schedule(prog, 0, f);
      while (b < m) {
        if (f < m)
          schedule(prog, 0, f++);
        schedule(prog, 1, b++);
      }
    } else {
      for (int mb = 0; mb < m; ++mb)
        schedule(prog, 0, mb);
      for (int mb = 0; mb < m; ++mb)
        schedule(prog, 1, mb);
    }
    schedule(prog, 2, -1);
  }
  return p;
}

plan::Plan buildMlpPlan(const MlpPlanOptions &o) {
  plan::Plan p;
  p.set_format_version(plan::kFormatVersion);
  p.set_producer("cleave runtime tests");
  for (auto [name, size] : {std::pair<const char *, int64_t>{"dp", o.dp},
                            {"tp", o.tp}}) {
    plan::MeshAxis *axis = p.mutable_mesh()->add_axes();
    axis->set_name(name);
    axis->set_size(size);
  }
  for (int64_t r = 0; r < o.dp * o.tp; ++r) {
    plan::RankAssignment *rank = p.add_ranks();
    rank->set_rank(static_cast<int32_t>(r));
    rank->set_program(0);
    rank->add_coords(r / o.tp);
    rank->add_coords(r % o.tp);
  }
  p.mutable_knobs()->set_dp(o.dp);
  p.mutable_knobs()->set_tp(o.tp);
  p.mutable_knobs()->set_num_microbatches(o.microbatches);
  plan::TrainingConfig *training = p.mutable_training();
  training->set_global_batch(o.batch);
  training->set_optimizer(o.optimizer);
  training->set_lr(o.lr);
  training->set_seed(1234);
  training->set_tokens_per_step(o.batch);
  training->set_flops_per_step(6.0 * o.batch * o.hidden * (o.in + o.classes));
  for (auto [name, rows, cols] :
       {std::tuple<const char *, int64_t, int64_t>{"w1", o.in, o.hidden},
        {"w2", o.hidden, o.classes}}) {
    plan::ParameterSharding *param = p.add_parameters();
    param->set_name(name);
    param->add_global_shape(rows);
    param->add_global_shape(cols);
    param->mutable_init()->set_kind(plan::InitSpec::NORMAL);
    param->mutable_init()->set_std(0.5);
  }

  Program &prog = *p.add_programs();
  prog.set_id(0);
  prog.set_name("stage0");
  Builder b(prog);
  int64_t M = o.microbatches, rows = o.batch / (M * o.dp);
  int64_t h = o.hidden / o.tp, c = o.classes;
  int m = static_cast<int>(M);
  int32_t w1 = b.tensor("w1", {o.in, h}, TensorDecl::PARAMETER);
  int32_t w2 = b.tensor("w2", {h, c}, TensorDecl::PARAMETER);
  int32_t x = b.tensor("x", {rows, o.in}, TensorDecl::INPUT, plan::F32, m);
  int32_t labels =
      b.tensor("labels", {rows}, TensorDecl::INPUT, plan::I64, m);
  int32_t pre = b.tensor("pre", {rows, h}, TensorDecl::STASH, plan::F32, m);
  int32_t act = b.tensor("act", {rows, h}, TensorDecl::STASH, plan::F32, m);
  int32_t logits =
      b.tensor("logits", {rows, c}, TensorDecl::STASH, plan::F32, m);
  int32_t loss = b.tensor("loss", {}, TensorDecl::STASH, plan::F32, m);
  int32_t partial = b.tensor("partial", {rows, c}, TensorDecl::TRANSIENT);
  int32_t dloss = b.tensor("dloss", {}, TensorDecl::CONSTANT);
  int32_t dlogits = b.tensor("dlogits", {rows, c}, TensorDecl::TRANSIENT);
  int32_t dw2 = b.tensor("dw2", {h, c}, TensorDecl::TRANSIENT);
  int32_t dact = b.tensor("dact", {rows, h}, TensorDecl::TRANSIENT);
  int32_t dpre = b.tensor("dpre", {rows, h}, TensorDecl::TRANSIENT);
  int32_t dw1 = b.tensor("dw1", {o.in, h}, TensorDecl::TRANSIENT);
  int32_t g1 = b.tensor("w1.grad", {o.in, h}, TensorDecl::GRADIENT);
  int32_t g2 = b.tensor("w2.grad", {h, c}, TensorDecl::GRADIENT);
  int32_t s1 = b.tensor("w1.exp_avg", {o.in, h}, TensorDecl::OPTIMIZER_STATE);
  int32_t s2 = b.tensor("w2.exp_avg", {h, c}, TensorDecl::OPTIMIZER_STATE);
  int32_t v1 = b.tensor("w1.exp_avg_sq", {o.in, h},
                        TensorDecl::OPTIMIZER_STATE);
  int32_t v2 = b.tensor("w2.exp_avg_sq", {h, c}, TensorDecl::OPTIMIZER_STATE);
  int32_t step = b.tensor("step", {}, TensorDecl::INPUT);

  Builder::dims(*prog.mutable_tensors(w1), {"", "tp"});
  Builder::dims(*prog.mutable_tensors(w2), {"tp", ""});
  for (int32_t id : {g1, s1, v1})
    Builder::dims(*prog.mutable_tensors(id), {"", "tp"});
  for (int32_t id : {g2, s2, v2})
    Builder::dims(*prog.mutable_tensors(id), {"tp", ""});
  prog.mutable_tensors(w1)->set_param_index(0);
  prog.mutable_tensors(w2)->set_param_index(1);
  for (int32_t id : {g1, s1, v1})
    prog.mutable_tensors(id)->set_param_index(0);
  for (int32_t id : {g2, s2, v2})
    prog.mutable_tensors(id)->set_param_index(1);
  for (int32_t id : {s1, s2})
    prog.mutable_tensors(id)->set_state("exp_avg");
  for (int32_t id : {v1, v2})
    prog.mutable_tensors(id)->set_state("exp_avg_sq");
  prog.mutable_tensors(x)->set_input_name("pixels");
  prog.mutable_tensors(x)->set_seq_dim(-1);
  prog.mutable_tensors(labels)->set_input_name("labels");
  prog.mutable_tensors(labels)->set_seq_dim(-1);
  prog.mutable_tensors(labels)->set_vocab(c);
  prog.mutable_tensors(step)->set_input_name("step");
  prog.mutable_tensors(step)->set_seq_dim(-1);
  float scale = 1.0f / static_cast<float>(M);
  prog.mutable_tensors(dloss)->set_constant_value(
      std::string(reinterpret_cast<const char *>(&scale), 4));
  prog.set_loss_tensor(loss);

  plan::Segment *begin = prog.add_segments();
  begin->set_name("step_begin");
  begin->set_kind(plan::Segment::STEP_BEGIN);
  op(begin, "runtime.zero", {}, {g1, g2});

  plan::Segment *fwd = prog.add_segments();
  fwd->set_name("forward");
  fwd->set_kind(plan::Segment::FORWARD);
  op(fwd, "graph.matmul", {x, w1}, {pre});
  op(fwd, "graph.relu", {pre}, {act});
  if (o.tp > 1) {
    op(fwd, "graph.matmul", {act, w2}, {partial});
    Instruction *ar = op(fwd, "comm.all_reduce", {partial}, {logits});
    setAxes(ar, "tp");
    setS(ar, "reduction", "sum");
  } else {
    op(fwd, "graph.matmul", {act, w2}, {logits});
  }
  setI(op(fwd, "graph.cross_entropy", {logits, labels}, {loss}),
       "ignore_index", -100);

  plan::Segment *bwd = prog.add_segments();
  bwd->set_name("backward");
  bwd->set_kind(plan::Segment::BACKWARD);
  op(bwd, "graph.cross_entropy_grad", {logits, labels, dloss}, {dlogits});
  setB(op(bwd, "graph.matmul", {act, dlogits}, {dw2}), "transpose_lhs");
  op(bwd, "runtime.accumulate", {dw2}, {g2});
  setB(op(bwd, "graph.matmul", {dlogits, w2}, {dact}), "transpose_rhs");
  setS(op(bwd, "graph.activation_grad", {pre, dact}, {dpre}), "kind", "relu");
  setB(op(bwd, "graph.matmul", {x, dpre}, {dw1}), "transpose_lhs");
  op(bwd, "runtime.accumulate", {dw1}, {g1});

  plan::Segment *opt = prog.add_segments();
  opt->set_name("optimizer");
  opt->set_kind(plan::Segment::OPTIMIZER);
  int handle = 0;
  for (int32_t g : {g1, g2}) {
    Instruction *ar = op(opt, "comm.all_reduce", {g}, {g});
    setAxes(ar, "dp");
    setS(ar, "reduction", "mean");
    ar->set_async_handle(handle++);
  }
  for (int h2 = 0; h2 < handle; ++h2)
    setI(op(opt, "comm.wait", {}, {}), "handle", h2);
  for (auto [w, g, s, v] : {std::tuple{w1, g1, s1, v1}, {w2, g2, s2, v2}}) {
    Instruction *update;
    if (o.optimizer == "adamw") {
      update = op(opt, "graph.adamw_update", {w, g, s, v, step}, {w, s, v});
      setF(update, "beta1", 0.9);
      setF(update, "beta2", 0.999);
      setF(update, "eps", 1e-8);
      setF(update, "weight_decay", 0.0);
    } else {
      update = op(opt, "graph.sgd_update", {w, g, s}, {w, s});
      setF(update, "mu", 0.0);
      setF(update, "weight_decay", 0.0);
    }
    setF(update, "lr", o.lr);
  }

  auto schedule = [&](int segment, int microbatch) {
    plan::ScheduleStep *s = prog.add_schedule();
    s->set_segment(segment);
    s->set_microbatch(microbatch);
  };
  schedule(0, -1);
  for (int mb = 0; mb < m; ++mb) {
    schedule(1, mb);
    schedule(2, mb);
  }
  schedule(3, -1);
  return p;
}

plan::Plan buildInferencePlan(const MlpPlanOptions &o) {
  plan::Plan p;
  p.set_format_version(plan::kFormatVersion);
  p.set_producer("cleave runtime tests");
  plan::MeshAxis *axis = p.mutable_mesh()->add_axes();
  axis->set_name("dp");
  axis->set_size(o.dp);
  for (int64_t r = 0; r < o.dp; ++r) {
    plan::RankAssignment *rank = p.add_ranks();
    rank->set_rank(static_cast<int32_t>(r));
    rank->set_program(0);
    rank->add_coords(r);
  }
  p.mutable_knobs()->set_dp(o.dp);
  p.mutable_knobs()->set_tp(1);
  p.mutable_knobs()->set_num_microbatches(o.microbatches);
  plan::TrainingConfig *training = p.mutable_training();
  training->set_global_batch(o.batch);
  training->set_optimizer("none");
  training->set_seed(1234);
  training->set_tokens_per_step(o.batch);
  training->set_flops_per_step(2.0 * o.batch * o.in * o.hidden);
  plan::ParameterSharding *param = p.add_parameters();
  param->set_name("w");
  param->add_global_shape(o.in);
  param->add_global_shape(o.hidden);
  param->mutable_init()->set_kind(plan::InitSpec::NORMAL);
  param->mutable_init()->set_std(0.5);

  Program &prog = *p.add_programs();
  prog.set_id(0);
  prog.set_name("stage0");
  Builder b(prog);
  int m = static_cast<int>(o.microbatches);
  int64_t rows = o.batch / (o.microbatches * o.dp);
  int32_t w = b.tensor("w", {o.in, o.hidden}, TensorDecl::PARAMETER);
  int32_t x = b.tensor("x", {rows, o.in}, TensorDecl::INPUT, plan::F32, m);
  int32_t y = b.tensor("y", {rows, o.hidden}, TensorDecl::STASH, plan::F32, m);
  int32_t pre = b.tensor("pre", {rows, o.hidden}, TensorDecl::TRANSIENT);
  prog.mutable_tensors(w)->set_param_index(0);
  prog.mutable_tensors(x)->set_input_name("pixels");
  prog.mutable_tensors(x)->set_seq_dim(-1);
  prog.add_output_tensors(y);
  plan::Segment *fwd = segment(prog, "forward", plan::Segment::FORWARD);
  op(fwd, "graph.matmul", {x, w}, {pre});
  op(fwd, "graph.relu", {pre}, {y});
  for (int mb = 0; mb < m; ++mb)
    schedule(prog, 0, mb);
  return p;
}

plan::Plan buildInferencePipelinePlan(const MlpPlanOptions &o) {
  plan::Plan p;
  header(p, o);
  p.mutable_training()->set_optimizer("none");
  plan::MeshAxis *axis = p.mutable_mesh()->add_axes();
  axis->set_name("pp");
  axis->set_size(2);
  for (int r = 0; r < 2; ++r) {
    plan::RankAssignment *rank = p.add_ranks();
    rank->set_rank(r);
    rank->set_program(r);
    rank->add_coords(r);
  }
  int m = static_cast<int>(o.microbatches);
  int64_t rows = o.batch / o.microbatches, h = o.hidden, c = o.classes;

  Program &s0 = *p.add_programs();
  s0.set_id(0);
  s0.set_name("stage0");
  s0.set_stage(0);
  Builder b0(s0);
  int32_t w1 = b0.tensor("w1", {o.in, h}, TensorDecl::PARAMETER);
  int32_t x = b0.tensor("x", {rows, o.in}, TensorDecl::INPUT, plan::F32, m);
  int32_t pre = b0.tensor("pre", {rows, h}, TensorDecl::TRANSIENT);
  int32_t act =
      b0.tensor("act", {rows, h}, TensorDecl::COMM_BUFFER, plan::F32, m);
  s0.mutable_tensors(w1)->set_param_index(0);
  s0.mutable_tensors(x)->set_input_name("pixels");
  s0.mutable_tensors(x)->set_seq_dim(-1);
  plan::Segment *f0 = segment(s0, "forward", plan::Segment::FORWARD);
  op(f0, "graph.matmul", {x, w1}, {pre});
  op(f0, "graph.relu", {pre}, {act});
  Instruction *send = op(f0, "comm.send", {act}, {});
  setS(send, "axis", "pp");
  setI(send, "offset", 1);
  setI(send, "tag", 0);
  setB(send, "buffered");

  Program &s1 = *p.add_programs();
  s1.set_id(1);
  s1.set_name("stage1");
  s1.set_stage(1);
  Builder b1(s1);
  int32_t w2 = b1.tensor("w2", {h, c}, TensorDecl::PARAMETER);
  int32_t actIn =
      b1.tensor("act", {rows, h}, TensorDecl::COMM_BUFFER, plan::F32, m);
  int32_t logits =
      b1.tensor("logits", {rows, c}, TensorDecl::STASH, plan::F32, m);
  s1.mutable_tensors(w2)->set_param_index(1);
  s1.add_output_tensors(logits);
  plan::Segment *f1 = segment(s1, "forward", plan::Segment::FORWARD);
  Instruction *recv = op(f1, "comm.recv", {}, {actIn});
  setS(recv, "axis", "pp");
  setI(recv, "offset", -1);
  setI(recv, "tag", 0);
  op(f1, "graph.matmul", {actIn, w2}, {logits});

  for (Program *prog : {&s0, &s1})
    for (int mb = 0; mb < m; ++mb)
      schedule(*prog, 0, mb);
  return p;
}

} // namespace cleave::test
