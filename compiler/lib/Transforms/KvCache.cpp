//===- KvCache.cpp - A decoder's forward as one generation step -----------===//
//
// cleave-kv-cache (Passes.td): the model built or imported for T tokens a
// sequence becomes one step of autoregressive generation over a paged
// key/value cache. What changes is only where attention reads its keys and
// values and where positions come from: each fused causal attention writes
// this step's keys and values into its layer's cache pool and attends over
// the whole cache of the sequence (graph.cache_write, graph.paged_attention:
// GraphCacheOps.td), rotary embeddings rotate each token by its position,
// and a learned position table is read at the tokens' positions. The rest
// of the graph (projections, norms, MLPs, experts, the head) is untouched,
// so tensor and pipeline partitioning apply to the step as to the forward
// pass.
//
//===----------------------------------------------------------------------===//

#include "cleave/Dialect/Graph/IR/GraphDialect.h"
#include "cleave/Dialect/Graph/IR/GraphOps.h"
#include "cleave/Transforms/ExportedMasks.h"
#include "cleave/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

namespace cleave {
#define GEN_PASS_DEF_KVCACHE
#include "cleave/Transforms/Passes.h.inc"
} // namespace cleave

using namespace mlir;
using namespace cleave::graph;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The step's shape, read off its attentions: B sequences of T tokens.
struct StepShape {
  int64_t batch = 0, tokens = 0;
};

/// An attention's queries [B, H, T, D] and keys [B, kv_heads, T, D] as
/// they are, or from grouped-query form ([B, kv, G, T, D] against
/// [B, kv, 1, T, D]); none for any other form.
struct AttentionForm {
  int64_t batch, heads, kvHeads, tokens, dim;
};

std::optional<AttentionForm> formOf(AttentionOp a) {
  ArrayRef<int64_t> q = typeOf(a.getQuery()).getShape(),
                    k = typeOf(a.getKey()).getShape();
  int64_t rank = q.size();
  if (rank == 4 && k.size() == 4 && q[0] == k[0] && q[1] % k[1] == 0 &&
      q[2] == k[2] && q[3] == k[3])
    return AttentionForm{q[0], q[1], k[1], q[2], q[3]};
  if (rank == 5 && k.size() == 5 && q[0] == k[0] && q[1] == k[1] &&
      k[2] == 1 && q[3] == k[3] && q[4] == k[4])
    return AttentionForm{q[0], q[1] * q[2], k[1], q[3], q[4]};
  return std::nullopt;
}

/// `f`'s graph.input named `name`, if it has one.
InputOp inputNamed(func::FuncOp f, StringRef name) {
  for (InputOp in : f.getOps<InputOp>())
    if (in.getName() == name)
      return in;
  return InputOp();
}

/// The parameter `v` reads, directly or transposed (a projection's
/// weight as exporters write it); none for an activation.
ParamOp weightOf(Value v) {
  if (auto t = v.getDefiningOp<TransposeOp>())
    v = t.getInput();
  return v.getDefiningOp<ParamOp>();
}

/// The module path of the layer that made `query`, for its caches' names:
/// the first of the parameters upstream, nearest first, whose name has a
/// module path ("layers.3.self_attn.q_proj.weight" without its last two
/// components) that `taken` does not hold yet; the weights of matmuls
/// (the projections) are tried before any other parameter. Exporters
/// leave a folded weight a name of their own ("val_77"), and parameters
/// every layer reads (the rotary frequencies, `rotary_emb.inv_freq`) are
/// already taken by the first layer; a norm's weight
/// ("layers.3.input_layernorm.weight") then names the layer. Empty when
/// none is near.
std::string modulePathOf(Value query, const llvm::StringSet<> &taken) {
  auto prefixOf = [&](ParamOp p) -> std::string {
    StringRef name = p.getName();
    size_t last = name.rfind('.');
    size_t second = last == StringRef::npos ? last : name.rfind('.', last - 1);
    if (second == StringRef::npos || taken.contains(name.substr(0, second)))
      return "";
    return name.substr(0, second).str();
  };
  for (bool projectionsOnly : {true, false}) {
    SmallVector<Value> frontier{query};
    llvm::SmallPtrSet<Operation *, 32> seen;
    for (int depth = 0; depth < 16 && !frontier.empty(); ++depth) {
      SmallVector<Value> next;
      for (Value v : frontier) {
        Operation *def = v.getDefiningOp();
        if (!def || !seen.insert(def).second)
          continue;
        if (auto matmul = dyn_cast<MatmulOp>(def))
          if (ParamOp p = weightOf(matmul.getRhs()))
            if (std::string prefix = prefixOf(p); !prefix.empty())
              return prefix;
        if (auto p = dyn_cast<ParamOp>(def); p && !projectionsOnly)
          if (std::string prefix = prefixOf(p); !prefix.empty())
            return prefix;
        llvm::append_range(next, def->getOperands());
      }
      frontier = std::move(next);
    }
  }
  return "";
}

/// Whether `v` is computed from a graph input (positions, tokens): a
/// tensor that is not is fixed when the graph was built or exported.
bool readsAnInput(Value v) {
  llvm::SmallPtrSet<Operation *, 32> seen;
  SmallVector<Value> stack{v};
  while (!stack.empty()) {
    Operation *def = stack.pop_back_val().getDefiningOp();
    if (!def || !seen.insert(def).second)
      continue;
    if (isa<InputOp>(def))
      return true;
    llvm::append_range(stack, def->getOperands());
  }
  return false;
}

/// A rotation of the last axis' halves, concat(-x[half:], x[:half]) (the
/// rotate_half of Hugging Face's rotary embeddings), multiplied by a
/// tensor no input feeds: rotary angles an exporter computed for fixed
/// positions and folded.
Operation *foldedRotation(func::FuncOp f) {
  Operation *found = nullptr;
  f.walk([&](ConcatOp c) {
    if (found || c->getNumOperands() != 2)
      return;
    auto neg = c->getOperand(0).getDefiningOp<NegOp>();
    auto second = neg ? neg.getInput().getDefiningOp<SliceOp>() : SliceOp();
    auto first = c->getOperand(1).getDefiningOp<SliceOp>();
    if (!second || !first || first.getInput() != second.getInput())
      return;
    for (Operation *user : c->getUsers())
      if (auto mul = dyn_cast<MulOp>(user)) {
        Value angles =
            mul.getLhs() == c.getResult() ? mul.getRhs() : mul.getLhs();
        if (!readsAnInput(angles))
          found = mul;
      }
  });
  return found;
}

/// Whether `s` normalises attention scores: causal, or over a product of
/// two activations (queries and keys) reached through the scale, mask and
/// bias ops between them. A mixture of experts' router normalises a
/// product with a weight, which a generation step keeps as it is.
bool scoresOfActivations(SoftmaxOp s) {
  if (s.getCausal())
    return true;
  SmallVector<Value> frontier{s.getInput()};
  for (int depth = 0; depth < 6 && !frontier.empty(); ++depth) {
    SmallVector<Value> next;
    for (Value v : frontier) {
      Operation *def = v.getDefiningOp();
      if (auto m = dyn_cast_or_null<MatmulOp>(def)) {
        if (!weightOf(m.getLhs()) && !weightOf(m.getRhs()))
          return true;
      } else if (isa_and_nonnull<AddOp, MulOp, DivOp, SubOp, WhereOp, CastOp,
                                 ReshapeOp>(def)) {
        llvm::append_range(next, def->getOperands());
      }
    }
    frontier = std::move(next);
  }
  return false;
}

struct KvCachePass : cleave::impl::KvCacheBase<KvCachePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(rewrite(getOperation())))
      signalPassFailure();
  }

  LogicalResult rewrite(ModuleOp module);
  /// The leading run of inputs and parameters ends before this op.
  Operation *firstComputation(func::FuncOp f) {
    for (Operation &op : f.front())
      if (!isa<InputOp, ParamOp>(op))
        return &op;
    return f.front().getTerminator();
  }
};

LogicalResult KvCachePass::rewrite(ModuleOp module) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("cleave-kv-cache: expected a func.func @forward");
  if (maxLength < 1 || blockSize < 1 || blocks < 0)
    return forward.emitError("cleave-kv-cache: max-length and block-size must "
                             "be at least 1 and blocks at least 0 (got ")
           << int64_t(maxLength) << ", " << int64_t(blockSize) << ", "
           << int64_t(blocks) << ")";

  // An exported decoder's masks, built from its padding input and a
  // causal triangle, are plain causal attention in a step that pads
  // nothing.
  cleave::foldExportedCausalMasks(forward);
  SmallVector<AttentionOp> attentions;
  forward.walk([&](AttentionOp a) { attentions.push_back(a); });
  SmallVector<SoftmaxOp> softmaxes;
  forward.walk([&](SoftmaxOp s) {
    if (scoresOfActivations(s))
      softmaxes.push_back(s);
  });
  if (!softmaxes.empty())
    return softmaxes.front().emitOpError(
        "is attention left unfused; a generation step needs every attention "
        "fused (cleave-fuse-attention) to read its keys from the cache");
  if (attentions.empty())
    return forward.emitError("cleave-kv-cache: the model has no attention "
                             "to give a key/value cache");
  StepShape step;
  for (AttentionOp a : attentions) {
    std::optional<AttentionForm> form = formOf(a);
    if (!a.getCausal() || a.getMask() || a.getQueryBlocks())
      return a.emitOpError("is not plain causal self-attention (a mask, "
                           "bidirectional keys or a sequence block): it "
                           "has no key/value cache form");
    if (!form)
      return a.emitOpError("reads keys of another length or layout than "
                           "its queries: it is not self-attention");
    if (!a.getLse().use_empty())
      return a.emitOpError("has its log-sum-exp read (a backward pass): a "
                           "generation step is forward only");
    if (step.batch && (form->batch != step.batch || form->tokens != step.tokens))
      return a.emitOpError("has ")
             << form->batch << " sequences of " << form->tokens
             << " tokens where another attention has " << step.batch
             << " of " << step.tokens;
    step = {form->batch, form->tokens};
  }
  int64_t maxBlocks = (maxLength + blockSize - 1) / blockSize;
  int64_t pool = blocks ? blocks : step.batch * maxBlocks;

  OpBuilder b(module.getContext());
  Location loc = forward.getLoc();
  auto i64 = b.getI64Type();
  // The scheduler's inputs, after the graph's own.
  b.setInsertionPoint(firstComputation(forward));
  auto input = [&](StringRef name, ArrayRef<int64_t> shape) -> FailureOr<Value> {
    if (InputOp taken = inputNamed(forward, name))
      return taken.emitOpError("is an input the model already has, but a "
                               "generation step fills '")
             << name << "' itself";
    return Value(InputOp::create(b, loc, RankedTensorType::get(shape, i64),
                                 name));
  };
  // An exported decoder's own padding input: still read after the masks
  // folded, it feeds something a generation step cannot fill.
  if (InputOp padding = inputNamed(forward, cleave::kPaddingMaskInput))
    return padding.emitOpError("is read by more than attention's causal "
                               "mask (")
           << *(*padding->getUsers().begin())
           << "): a generation step pads nothing and has no such input";
  // The runtime's scheduler feeds the step's token ids as `tokens` (the
  // zoo's name): an exported decoder's `input_ids`, the indices its token
  // embedding gathers, takes that name.
  InputOp tokenIds;
  forward.walk([&](GatherOp g) {
    auto in = g.getIndices().getDefiningOp<InputOp>();
    if (!tokenIds && in && g.getData().getDefiningOp<ParamOp>() &&
        g.getAxis() == 0)
      tokenIds = in;
  });
  if (tokenIds && tokenIds.getName() != "tokens") {
    if (InputOp taken = inputNamed(forward, "tokens"))
      return taken.emitOpError("is named as the step's token ids, which "
                               "are '")
             << tokenIds.getName() << "' here";
    tokenIds.setName("tokens");
  }
  // An exported decoder's `position_ids` input ([B, T], as Hugging Face
  // models take it) becomes the step's positions.
  InputOp exportedPositions = inputNamed(forward, "position_ids");
  if (exportedPositions) {
    auto type = exportedPositions.getType();
    if (type.getShape() != ArrayRef<int64_t>{step.batch, step.tokens} ||
        !type.getElementType().isInteger(64))
      return exportedPositions.emitOpError("is ")
             << type << ", not the step's positions tensor<" << step.batch
             << "x" << step.tokens << "xi64>";
    exportedPositions.setName("positions");
  }
  FailureOr<Value> positions =
      exportedPositions
          ? FailureOr<Value>(exportedPositions.getResult())
          : input("positions", {step.batch, step.tokens});
  FailureOr<Value> slots = input("slots", {step.batch * step.tokens});
  FailureOr<Value> table = input("block_table", {step.batch, maxBlocks});
  FailureOr<Value> lengths = input("lengths", {step.batch});
  if (failed(positions) || failed(slots) || failed(table) || failed(lengths))
    return failure();

  llvm::StringSet<> cachePrefixes;
  for (auto [i, a] : llvm::enumerate(attentions)) {
    AttentionForm form = *formOf(a);
    Type element = typeOf(a.getKey()).getElementType();
    auto cacheType = RankedTensorType::get(
        {pool, blockSize, form.kvHeads, form.dim}, element);
    // Named in the attention's module, beside its projections, so that
    // pipeline stages and reports place them with their layer.
    std::string prefix = modulePathOf(a.getQuery(), cachePrefixes);
    if (prefix.empty())
      prefix = "kv_cache." + std::to_string(i);
    cachePrefixes.insert(prefix);
    b.setInsertionPoint(a);
    auto cache = [&](StringRef which) {
      std::string name = prefix + "." + which.str() + "_cache";
      return ParamOp::create(b, NameLoc::get(b.getStringAttr(name)), cacheType,
                             name, /*frozen=*/true, ElementsAttr(),
                             /*aliases=*/ArrayAttr())
          .getResult();
    };
    Value keyCache = cache("k"), valueCache = cache("v");
    Location at = a.getLoc();
    // Keys [B, kv, (1,) T, D] -> rows [B * T, kv, D], token-major as the
    // slots are.
    auto rows = [&](Value x) {
      Value four = ReshapeOp::create(
          b, at,
          RankedTensorType::get(
              {form.batch, form.kvHeads, form.tokens, form.dim}, element),
          x);
      Value tokenMajor = TransposeOp::create(b, at, four, {0, 2, 1, 3});
      return ReshapeOp::create(
                 b, at,
                 RankedTensorType::get(
                     {form.batch * form.tokens, form.kvHeads, form.dim},
                     element),
                 tokenMajor)
          .getResult();
    };
    Value keys = CacheWriteOp::create(b, at, cacheType, rows(a.getKey()),
                                      keyCache, *slots);
    Value values = CacheWriteOp::create(b, at, cacheType, rows(a.getValue()),
                                        valueCache, *slots);
    auto queryType = RankedTensorType::get(
        {form.batch, form.heads, form.tokens, form.dim}, element);
    Value query = ReshapeOp::create(b, at, queryType, a.getQuery());
    Value out = PagedAttentionOp::create(b, at, queryType, query, keys, values,
                                         *table, *lengths, a.getScaleAttr());
    Value back = ReshapeOp::create(b, at, a.getOut().getType(), out);
    a.getOut().replaceAllUsesWith(back);
    a.erase();
    ++numCached;
  }

  // Rotary embeddings at each token's position.
  WalkResult ropes = forward.walk([&](RopeOp r) {
    if (r.getPositions())
      return WalkResult::advance();
    ArrayRef<int64_t> shape = typeOf(r.getInput()).getShape();
    if (shape[0] != step.batch || shape[1] != step.tokens || r.getOffset() ||
        r.getPositionBlocks()) {
      r.emitOpError("rotates another layout than the step's [")
          << step.batch << ", " << step.tokens
          << "] tokens, or a block of them: it cannot take their positions";
      return WalkResult::interrupt();
    }
    r.getPositionsMutable().assign(*positions);
    return WalkResult::advance();
  });
  if (ropes.wasInterrupted())
    return failure();

  // Rotary angles an exporter folded for positions [0, T) cannot follow
  // the tokens' positions.
  if (Operation *rotation = foldedRotation(forward))
    return rotation->emitOpError(
        "rotates by angles fixed when the model was exported (the "
        "exporter folded them for positions 0 to T-1): a generation step "
        "needs them at each token's position; export the model with "
        "position_ids as an input, as forward(input_ids, attention_mask, "
        "position_ids)");

  // A learned position table read as rows [0, T) (added to the token
  // embeddings over the batch) is read at the tokens' positions: a slice
  // of its first T rows (the zoo's GPT), or a gather at constant indices
  // 0..T-1 for every sequence (an exporter folds the positions a model
  // computes itself, as GPT-2 exported without position_ids does).
  auto addsOnly = [](Operation *op) {
    return llvm::all_of(op->getUsers(),
                        [](Operation *u) { return isa<AddOp>(u); });
  };
  SmallVector<std::pair<Operation *, Value>> tables; // the read, the table
  forward.walk([&](SliceOp s) {
    auto param = s.getInput().getDefiningOp<ParamOp>();
    auto type = typeOf(s.getResult());
    if (param && type.getRank() == 2 && type.getDimSize(0) == step.tokens &&
        s.getStarts()[0] == 0 && s.getStarts()[1] == 0 &&
        llvm::all_of(s.getStrides(), [](int64_t v) { return v == 1; }) &&
        type.getDimSize(1) == typeOf(s.getInput()).getDimSize(1) &&
        addsOnly(s))
      tables.push_back({s, s.getInput()});
  });
  forward.walk([&](GatherOp g) {
    auto param = g.getData().getDefiningOp<ParamOp>();
    auto constant = g.getIndices().getDefiningOp<ConstantOp>();
    auto indices =
        constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue())
                 : DenseIntElementsAttr();
    if (!param || !indices || g.getAxis() != 0 ||
        typeOf(g.getData()).getRank() != 2 || !addsOnly(g))
      return;
    ArrayRef<int64_t> shape = indices.getType().getShape();
    if (shape.size() != 2 || shape[1] != step.tokens ||
        (shape[0] != 1 && shape[0] != step.batch))
      return;
    int64_t n = 0;
    for (const APInt &v : indices.getValues<APInt>())
      if (v.getSExtValue() != n++ % step.tokens)
        return;
    tables.push_back({g, g.getData()});
  });
  for (auto [read, table] : tables) {
    int64_t rows = typeOf(table).getDimSize(0);
    if (rows < maxLength)
      return read->emitOpError("reads a position table of ")
             << rows << " positions, fewer than max-length "
             << int64_t(maxLength);
    b.setInsertionPoint(read);
    auto type = RankedTensorType::get(
        {step.batch, step.tokens, typeOf(table).getDimSize(1)},
        typeOf(table).getElementType());
    Value atPositions =
        GatherOp::create(b, read->getLoc(), type, table, *positions, 0);
    // The adds broadcast the table's rows over the batch: they now add
    // each sequence's own.
    read->getResult(0).replaceAllUsesWith(atPositions);
    read->erase();
  }

  // A training graph's loss becomes its logits: cross-entropy's first
  // operand is what the step returns, and the labels input goes.
  func::ReturnOp ret = cast<func::ReturnOp>(forward.front().getTerminator());
  bool changed = false;
  for (OpOperand &result : ret->getOpOperands())
    if (auto loss = result.get().getDefiningOp<CrossEntropyOp>()) {
      Value labels = loss.getLabels();
      result.set(loss.getLogits());
      changed = true;
      if (loss->use_empty())
        loss.erase();
      if (auto in = labels.getDefiningOp<InputOp>(); in && in->use_empty())
        in.erase();
    }
  if (changed)
    forward.setFunctionType(FunctionType::get(
        module.getContext(), {}, ValueRange(ret.getOperands()).getTypes()));
  return success();
}

} // namespace
