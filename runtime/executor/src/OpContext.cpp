//===- OpContext.cpp - Operand and attribute access, the kernel registry --===//

#include "cleave/runtime/executor/OpContext.h"

#include "Registry.h"

#include "cleave/runtime/plan/PlanIO.h"

#include <stdexcept>

namespace cleave::executor {

namespace k = cleave::kernels;

int64_t TensorView::numBytes() const {
  return numElements() * plan::dtypeBytes(dtype);
}

namespace {

const char *dtypeName(plan::DType dtype) {
  return plan::DType_Name(dtype).c_str();
}

const TensorView &operand(const std::vector<TensorView> &views, size_t i,
                          const char *what) {
  if (i >= views.size())
    throw std::invalid_argument("has no " + std::string(what) + " " +
                                std::to_string(i) + " (it has " +
                                std::to_string(views.size()) + ")");
  return views[i];
}

const TensorView &required(const std::vector<TensorView> &views, size_t i,
                           const char *what, plan::DType dtype) {
  const TensorView &v = operand(views, i, what);
  if (!v)
    throw std::invalid_argument(std::string(what) + " " + std::to_string(i) +
                                " is required but absent");
  if (v.dtype != dtype)
    throw std::invalid_argument(
        std::string(what) + " " + std::to_string(i) + " (tensor " +
        std::to_string(v.id) + ") is " + dtypeName(v.dtype) + ", expected " +
        dtypeName(dtype) + " (this kernel takes " + dtypeName(dtype) +
        " tensors)");
  return v;
}

} // namespace

const TensorView &OpContext::input(size_t i) const {
  return operand(inputs, i, "input");
}
const TensorView &OpContext::output(size_t i) const {
  return operand(outputs, i, "output");
}

k::ConstTensorRef OpContext::in(size_t i) const {
  const TensorView &v = required(inputs, i, "input", plan::F32);
  return {static_cast<const float *>(v.data), v.shape};
}

k::ConstTensorRef OpContext::inOpt(size_t i) const {
  if (i >= inputs.size() || !inputs[i])
    return {};
  return in(i);
}

k::IndexRef OpContext::index(size_t i) const {
  const TensorView &v = required(inputs, i, "input", plan::I64);
  return {static_cast<const int64_t *>(v.data), v.shape};
}

k::MaskRef OpContext::mask(size_t i) const {
  const TensorView &v = required(inputs, i, "input", plan::BOOL);
  return {static_cast<const uint8_t *>(v.data), v.shape};
}

k::TensorRef OpContext::out(size_t i) const {
  const TensorView &v = required(outputs, i, "output", plan::F32);
  return {static_cast<float *>(v.data), v.shape};
}

k::TensorRef OpContext::outOpt(size_t i) const {
  if (i >= outputs.size() || !outputs[i])
    return {};
  return out(i);
}

k::MutableIndexRef OpContext::outIndex(size_t i) const {
  const TensorView &v = required(outputs, i, "output", plan::I64);
  return {static_cast<int64_t *>(v.data), v.shape};
}

void OpContext::expectArity(size_t numInputs, size_t numOutputs) const {
  if (inputs.size() != numInputs || outputs.size() != numOutputs)
    throw std::invalid_argument(
        "has " + std::to_string(inputs.size()) + " inputs and " +
        std::to_string(outputs.size()) + " outputs, expected " +
        std::to_string(numInputs) + " and " + std::to_string(numOutputs));
}

void OpContext::expectArity(size_t minInputs, size_t maxInputs,
                            size_t numOutputs) const {
  if (inputs.size() < minInputs || inputs.size() > maxInputs ||
      outputs.size() != numOutputs)
    throw std::invalid_argument(
        "has " + std::to_string(inputs.size()) + " inputs and " +
        std::to_string(outputs.size()) + " outputs, expected " +
        std::to_string(minInputs) + " to " + std::to_string(maxInputs) +
        " and " + std::to_string(numOutputs));
}

bool OpContext::has(const std::string &name) const {
  return inst.attrs().count(name) != 0;
}

namespace {
const plan::Attr &requireAttr(const plan::Instruction &inst,
                              const std::string &name) {
  auto it = inst.attrs().find(name);
  if (it == inst.attrs().end())
    throw std::invalid_argument("attribute '" + name + "' is missing");
  return it->second;
}
[[noreturn]] void badAttr(const std::string &name, const char *expected) {
  throw std::invalid_argument("attribute '" + name + "' is not " + expected);
}
} // namespace

int64_t OpContext::attrInt(const std::string &name) const {
  const plan::Attr &a = requireAttr(inst, name);
  if (a.has_i())
    return a.i();
  if (a.has_b())
    return a.b();
  badAttr(name, "an integer");
}

int64_t OpContext::attrInt(const std::string &name, int64_t fallback) const {
  return has(name) ? attrInt(name) : fallback;
}

double OpContext::attrFloat(const std::string &name) const {
  const plan::Attr &a = requireAttr(inst, name);
  if (a.has_f())
    return a.f();
  if (a.has_i())
    return static_cast<double>(a.i());
  badAttr(name, "a number");
}

double OpContext::attrFloat(const std::string &name, double fallback) const {
  return has(name) ? attrFloat(name) : fallback;
}

bool attrBool(const plan::Instruction &inst, const std::string &name) {
  auto it = inst.attrs().find(name);
  if (it == inst.attrs().end())
    return false;
  if (it->second.has_b())
    return it->second.b();
  if (it->second.has_i())
    return it->second.i() != 0;
  badAttr(name, "a boolean");
}

bool OpContext::attrBool(const std::string &name) const {
  return executor::attrBool(inst, name);
}

std::string OpContext::attrString(const std::string &name) const {
  const plan::Attr &a = requireAttr(inst, name);
  if (!a.has_s())
    badAttr(name, "a string");
  return a.s();
}

std::string OpContext::attrString(const std::string &name,
                                  const std::string &fallback) const {
  return has(name) ? attrString(name) : fallback;
}

std::vector<int64_t> OpContext::attrInts(const std::string &name) const {
  const plan::Attr &a = requireAttr(inst, name);
  if (a.has_ints())
    return {a.ints().values().begin(), a.ints().values().end()};
  if (a.has_i())
    return {a.i()};
  // An empty list may arrive as an Attr with no value set.
  if (a.value_case() == plan::Attr::VALUE_NOT_SET)
    return {};
  badAttr(name, "an integer list");
}

int64_t OpContext::attrAxis(const std::string &name, int64_t rank) const {
  int64_t axis = attrInt(name);
  return axis < 0 ? axis + rank : axis;
}

std::vector<std::string> OpContext::attrStrings(const std::string &name) const {
  const plan::Attr &a = requireAttr(inst, name);
  if (a.has_strings())
    return {a.strings().values().begin(), a.strings().values().end()};
  if (a.has_s())
    return {a.s()};
  if (a.value_case() == plan::Attr::VALUE_NOT_SET ||
      (a.has_ints() && a.ints().values_size() == 0))
    return {};
  badAttr(name, "a list of strings");
}

comm::CommTensor commTensor(const TensorView &view) {
  comm::CommTensor t;
  t.data = view.data;
  t.shape = view.shape;
  switch (view.dtype) {
  case plan::F32:
    t.type = comm::ElementType::F32;
    break;
  case plan::I64:
    t.type = comm::ElementType::I64;
    break;
  case plan::BOOL:
    t.type = comm::ElementType::U8;
    break;
  case plan::BF16:
    t.type = comm::ElementType::BF16;
    break;
  case plan::F16:
    t.type = comm::ElementType::F16;
    break;
  default:
    throw std::invalid_argument(std::string("cannot communicate a ") +
                                dtypeName(view.dtype) + " tensor");
  }
  return t;
}

namespace {
const Registry &registry() {
  static const Registry kRegistry = [] {
    Registry r;
    registerComputeKernels(r);
    registerGradKernels(r);
    registerRuntimeKernels(r);
    return r;
  }();
  return kRegistry;
}
} // namespace

KernelFn findKernel(const std::string &op) {
  auto it = registry().find(op);
  return it == registry().end() ? nullptr : it->second;
}

std::vector<std::string> registeredOps() {
  std::vector<std::string> names;
  for (const auto &[name, fn] : registry())
    names.push_back(name);
  return names;
}

kernels::RowOffsets OpContext::sequenceBlock(const std::string &blocksAttr,
                                             int64_t rows) const {
  if (!has(blocksAttr))
    return kernels::RowOffsets(0);
  comm::Axes axes = attrStrings(blocksAttr);
  int64_t n = comm.groupSize(axes), g = comm.mesh().groupRank(axes);
  if (!attrBool("zigzag"))
    return kernels::RowOffsets::block(rows, g, n);
  if (rows % 2)
    throw std::invalid_argument("zigzag blocks need an even number of rows, "
                                "got " + std::to_string(rows));
  return kernels::RowOffsets::zigzag(rows, g, n);
}

kernels::RowOffsets OpContext::causalShift(int64_t queries,
                                           int64_t keys) const {
  if (!has("query_blocks"))
    return kernels::RowOffsets(keys - queries);
  int64_t n = comm.groupSize(attrStrings("query_blocks"));
  return sequenceBlock("query_blocks", queries).shifted(keys - n * queries);
}

} // namespace cleave::executor
