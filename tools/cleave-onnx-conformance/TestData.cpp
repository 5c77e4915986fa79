//===- TestData.cpp - A node test's model and data sets -------------------===//

#include "TestData.h"

#include "cleave/runtime/comm/Communicator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include <unistd.h>

namespace fs = std::filesystem;
namespace k = cleave::kernels;

namespace cleave::conformance {

const onnx::ValueInfoProto &declaredInput(const onnx::ModelProto &model,
                                          const std::string &name) {
  for (const onnx::ValueInfoProto &v : model.graph().input())
    if (v.name() == name)
      return v;
  return onnx::ValueInfoProto::default_instance();
}

bool matchDeclaredType(onnx::TensorProto &t, const onnx::ValueInfoProto &v,
                       std::string &why) {
  if (!v.type().has_tensor_type())
    return true;
  // Static dimensions the model declares must be the data's (a CastLike
  // test gives one element for its `like` input declared 3x4).
  const onnx::TensorShapeProto &shape = v.type().tensor_type().shape();
  if (v.type().tensor_type().has_shape()) {
    bool differs = shape.dim_size() != t.dims_size();
    for (int d = 0; d < shape.dim_size() && !differs; ++d)
      differs = shape.dim(d).has_dim_value() &&
                shape.dim(d).dim_value() != t.dims(d);
    if (differs) {
      why = "data of another shape than " + v.name() + " declares";
      return false;
    }
  }
  int32_t declared = v.type().tensor_type().elem_type();
  if (declared == t.data_type())
    return true;
  if (declared == onnx::TensorProto::BFLOAT16 &&
      t.data_type() == onnx::TensorProto::UINT16) {
    t.set_data_type(onnx::TensorProto::BFLOAT16);
    return true;
  }
  why = "data of element type " + std::to_string(t.data_type()) + " for " +
        v.name() + ", declared " + std::to_string(declared);
  return false;
}

std::optional<cleave::EvalTensor> toEval(const onnx::TensorProto &t,
                                         std::string &why) {
  k::Shape shape(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  const std::string &raw = t.raw_data();
  auto fromRaw = [&](auto sample, auto convert) {
    using T = decltype(sample);
    std::vector<T> values(n);
    if (raw.size() == size_t(n) * sizeof(T))
      std::memcpy(values.data(), raw.data(), raw.size());
    return convert(values);
  };
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT: {
    std::vector<float> v(t.float_data().begin(), t.float_data().end());
    if (!raw.empty())
      v = fromRaw(float(), [](std::vector<float> x) { return x; });
    if (int64_t(v.size()) != n)
      break;
    return k::Tensor(shape, v);
  }
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16: {
    // 16-bit floats: raw little-endian words, or one word per int32_data.
    std::vector<uint16_t> words(t.int32_data().begin(), t.int32_data().end());
    if (!raw.empty())
      words = fromRaw(uint16_t(), [](std::vector<uint16_t> x) { return x; });
    if (int64_t(words.size()) != n)
      break;
    std::vector<float> v(n);
    auto type = t.data_type() == onnx::TensorProto::FLOAT16
                    ? cleave::comm::ElementType::F16
                    : cleave::comm::ElementType::BF16;
    for (int64_t i = 0; i < n; ++i)
      v[i] = cleave::comm::halfToFloat(type, words[i]);
    return k::Tensor(shape, v);
  }
  case onnx::TensorProto::DOUBLE: {
    std::vector<double> d(t.double_data().begin(), t.double_data().end());
    if (!raw.empty())
      d = fromRaw(double(), [](std::vector<double> x) { return x; });
    if (int64_t(d.size()) != n)
      break;
    return k::Tensor(shape, std::vector<float>(d.begin(), d.end()));
  }
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::UINT8: {
    // Held as int64 (a uint64 above 2^63 as its bit pattern), from raw
    // little-endian values or the typed field ONNX keeps each type in.
    std::vector<int64_t> v;
    auto widen = [&](auto sample) {
      using T = decltype(sample);
      return fromRaw(sample, [](std::vector<T> x) {
        std::vector<int64_t> out;
        for (T e : x)
          out.push_back(static_cast<int64_t>(e));
        return out;
      });
    };
    switch (t.data_type()) {
    case onnx::TensorProto::INT64:
      v.assign(t.int64_data().begin(), t.int64_data().end());
      if (!raw.empty())
        v = widen(int64_t());
      break;
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::UINT32:
      for (uint64_t e : t.uint64_data())
        v.push_back(static_cast<int64_t>(e));
      if (!raw.empty())
        v = t.data_type() == onnx::TensorProto::UINT64 ? widen(uint64_t())
                                                       : widen(uint32_t());
      break;
    default: // INT32, INT16, INT8, UINT16, UINT8: int32_data
      v.assign(t.int32_data().begin(), t.int32_data().end());
      if (!raw.empty()) {
        switch (t.data_type()) {
        case onnx::TensorProto::INT32:
          v = widen(int32_t());
          break;
        case onnx::TensorProto::INT16:
          v = widen(int16_t());
          break;
        case onnx::TensorProto::INT8:
          v = widen(int8_t());
          break;
        case onnx::TensorProto::UINT16:
          v = widen(uint16_t());
          break;
        default:
          v = widen(uint8_t());
          break;
        }
      }
      break;
    }
    if (int64_t(v.size()) != n)
      break;
    return k::IndexTensor(shape, v);
  }
  case onnx::TensorProto::BOOL: {
    std::vector<uint8_t> v(t.int32_data().begin(), t.int32_data().end());
    if (!raw.empty())
      v = fromRaw(uint8_t(), [](std::vector<uint8_t> x) { return x; });
    if (int64_t(v.size()) != n)
      break;
    return k::MaskTensor(shape, v);
  }
  default:
    why = "element type " + std::to_string(t.data_type()) + " of " + t.name();
    return std::nullopt;
  }
  why = "malformed data in " + t.name();
  return std::nullopt;
}

std::string compare(const cleave::EvalTensor &got,
                    const cleave::EvalTensor &want) {
  if (got.index() != want.index())
    return "element kinds differ";
  return std::visit(
      [&](const auto &w) -> std::string {
        using T = std::decay_t<decltype(w)>;
        const T &g = std::get<T>(got);
        if (g.shape() != w.shape())
          return "shapes differ";
        for (int64_t i = 0; i < w.numElements(); ++i) {
          double a = double(g[i]), b = double(w[i]);
          bool ok = std::is_same_v<T, k::Tensor>
                        ? (std::isnan(b)   ? std::isnan(a)
                           : std::isinf(b) ? a == b
                                           : std::fabs(a - b) <=
                                                 1e-5 + 1e-3 * std::fabs(b))
                        : a == b;
          if (!ok)
            return "element " + std::to_string(i) + ": " + std::to_string(a) +
                   ", expected " + std::to_string(b);
        }
        return "";
      },
      want);
}

std::vector<fs::path> dataSets(const fs::path &dir) {
  std::vector<fs::path> sets;
  for (const auto &entry : fs::directory_iterator(dir))
    if (entry.is_directory() &&
        entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  std::sort(sets.begin(), sets.end());
  return sets;
}

std::string withIntegerInputsKnown(const fs::path &dir,
                                   const std::vector<fs::path> &sets,
                                   bool smallFloatVectors) {
  onnx::ModelProto model;
  if (!readProto(dir / "model.onnx", model) || sets.empty())
    return "";
  std::vector<std::string> initializers;
  for (const onnx::TensorProto &t : model.graph().initializer())
    initializers.push_back(t.name());
  onnx::GraphProto *graph = model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
  bool promoted = false;
  int index = 0;
  for (const onnx::ValueInfoProto &v : graph->input()) {
    if (std::find(initializers.begin(), initializers.end(), v.name()) !=
        initializers.end()) {
      *kept.Add() = v;
      continue;
    }
    std::string file = "input_" + std::to_string(index++) + ".pb";
    onnx::TensorProto first;
    bool integer = readProto(sets[0] / file, first) &&
                   (first.data_type() == onnx::TensorProto::INT64 ||
                    first.data_type() == onnx::TensorProto::INT32 ||
                    (smallFloatVectors &&
                     (first.dims_size() == 0 ||
                      (first.dims_size() == 1 && first.dims(0) <= 8)) &&
                     (first.data_type() == onnx::TensorProto::FLOAT ||
                      first.data_type() == onnx::TensorProto::BOOL)));
    for (size_t s = 1; integer && s < sets.size(); ++s) {
      onnx::TensorProto other;
      integer = readProto(sets[s] / file, other) &&
                other.SerializeAsString() == first.SerializeAsString();
    }
    if (!integer) {
      *kept.Add() = v;
      continue;
    }
    first.set_name(v.name());
    *graph->add_initializer() = first;
    promoted = true;
  }
  if (!promoted)
    return "";
  graph->mutable_input()->Swap(&kept);
  fs::path out = fs::temp_directory_path() /
                 ("cleave-conformance-" + std::to_string(::getpid()) + "-" +
                  dir.filename().string() + ".onnx");
  std::ofstream os(out, std::ios::binary);
  if (!model.SerializeToOstream(&os))
    return "";
  return out.string();
}

cleave::ImportOptions boundDims(const fs::path &dir,
                                const std::vector<fs::path> &sets) {
  cleave::ImportOptions options;
  onnx::ModelProto model;
  if (sets.empty() || !readProto(dir / "model.onnx", model))
    return options;
  std::vector<std::string> initializers;
  for (const onnx::TensorProto &t : model.graph().initializer())
    initializers.push_back(t.name());
  int index = 0;
  for (const onnx::ValueInfoProto &v : model.graph().input()) {
    if (std::find(initializers.begin(), initializers.end(), v.name()) !=
        initializers.end())
      continue;
    onnx::TensorProto data;
    bool read = readProto(sets[0] / ("input_" + std::to_string(index++) +
                                     ".pb"),
                          data);
    const onnx::TensorShapeProto &shape = v.type().tensor_type().shape();
    if (!read || shape.dim_size() != data.dims_size())
      continue;
    for (int d = 0; d < shape.dim_size(); ++d)
      if (!shape.dim(d).dim_param().empty())
        options.dims.emplace(shape.dim(d).dim_param(), data.dims(d));
  }
  return options;
}

} // namespace cleave::conformance
