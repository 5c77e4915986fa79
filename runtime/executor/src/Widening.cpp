//===- Widening.cpp - fp32 kernels on 16-bit storage ----------------------===//

#include "Widening.h"

#include <algorithm>

namespace cleave::executor {

namespace {

bool isHalf(plan::DType dtype) {
  return dtype == plan::BF16 || dtype == plan::F16;
}

} // namespace

bool needsWidening(const std::string &op, const OpContext &context) {
  // Communication (which may complete after the instruction, into its own
  // buffers) carries the storage type; copies and zeroing move bytes; a
  // cast converts.
  static const char *const kStorageOps[] = {
      "graph.cast",         "graph.all_reduce", "graph.all_gather",
      "graph.reduce_scatter", "graph.all_to_all", "graph.send",
      "graph.recv",         "graph.shard_slice", "graph.copy_to_group",
      "runtime.zero",       "runtime.copy"};
  if (op.compare(0, 5, "comm.") == 0 ||
      std::find(std::begin(kStorageOps), std::end(kStorageOps), op) !=
          std::end(kStorageOps))
    return false;
  auto half = [](const TensorView &v) { return v && isHalf(v.dtype); };
  return std::any_of(context.inputs.begin(), context.inputs.end(), half) ||
         std::any_of(context.outputs.begin(), context.outputs.end(), half);
}

Widening::~Widening() {
  for (Slot &s : slots_)
    backend_.deallocate(s.data);
}

float *Widening::take(int64_t elements) {
  // The smallest free buffer that holds it, else a new one.
  size_t best = slots_.size();
  for (size_t i = used_; i < slots_.size(); ++i)
    if (slots_[i].elements >= elements &&
        (best == slots_.size() || slots_[i].elements < slots_[best].elements))
      best = i;
  if (best == slots_.size()) {
    Slot s;
    s.elements = std::max<int64_t>(elements, 1);
    s.data = static_cast<float *>(
        backend_.allocate(s.elements * static_cast<int64_t>(sizeof(float))));
    slots_.push_back(s);
  }
  std::swap(slots_[best], slots_[used_]);
  return slots_[used_++].data;
}

void Widening::widen(OpContext &context) {
  auto widenView = [&](TensorView &view, bool written) {
    if (!view || !isHalf(view.dtype))
      return;
    auto it = widened_.find(view.data);
    if (it == widened_.end() ||
        it->second.original.numElements() < view.numElements()) {
      // A larger view of the same bytes (an operand whose memory a result
      // reuses) gets its own buffer; the smaller one is dropped.
      float *scratch = take(view.numElements());
      backend_.widen(view.data, view.dtype, scratch, view.numElements());
      it = widened_.insert_or_assign(view.data, Widened{scratch, view, false})
               .first;
    }
    it->second.written |= written;
    view.data = it->second.scratch;
    view.dtype = plan::F32;
  };
  for (TensorView &v : context.inputs)
    widenView(v, false);
  for (TensorView &v : context.outputs)
    widenView(v, true);
}

void Widening::narrow() {
  for (auto &[address, w] : widened_)
    if (w.written)
      backend_.narrow(w.scratch, w.original.data, w.original.dtype,
                      w.original.numElements());
  discard();
}

void Widening::discard() {
  widened_.clear();
  used_ = 0;
}

} // namespace cleave::executor
