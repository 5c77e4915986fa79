//===- CheckpointCommand.cpp - `cleave checkpoint` and weights files ------===//
//
// Plain C++ over runtime/checkpoint, and libonnx for the weights of an
// ONNX file.
//
//===----------------------------------------------------------------------===//

#include "CheckpointCommand.h"
#include "Commands.h"
#include "ToolSupport.h"

#include "cleave/runtime/checkpoint/Restore.h"
#include "cleave/runtime/checkpoint/SafeTensors.h"
#include "cleave/runtime/checkpoint/Weights.h"
#include "cleave/runtime/plan/PlanIO.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include "onnx/onnx_pb.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <unistd.h>

namespace cleave::tool {

namespace {

std::string shapeText(const google::protobuf::RepeatedField<int64_t> &shape) {
  return shape.empty() ? "scalar" : absl::StrJoin(shape, "x");
}

int error(const absl::Status &s, int code) {
  std::cerr << "cleave: error: " << s.message() << "\n";
  return code;
}

} // namespace

int inspectCheckpoint(const std::string &dir, bool json, bool verify) {
  absl::StatusOr<checkpoint::Checkpoint> ckpt = checkpoint::openCheckpoint(dir);
  if (!ckpt.ok())
    return error(ckpt.status(), absl::IsDataLoss(ckpt.status()) ? 1 : 2);
  const checkpoint::Manifest &m = ckpt->manifest;
  // Integrity: every entry read back against its checksum.
  std::vector<std::string> problems;
  int64_t verified = 0;
  if (verify) {
    for (int i = 0; i < m.tensors_size(); ++i) {
      const checkpoint::TensorInfo &t = m.tensors(i);
      checkpoint::Box whole;
      whole.origin.assign(t.global_shape_size(), 0);
      whole.extent.assign(t.global_shape().begin(), t.global_shape().end());
      std::string data(static_cast<size_t>(
                           whole.numElements() *
                           plan::dtypeBytes(static_cast<plan::DType>(t.dtype()))),
                       '\0');
      int64_t bytes = 0;
      if (absl::Status s = checkpoint::readBox(*ckpt, i, whole, data.data(),
                                               &bytes);
          !s.ok())
        problems.push_back(std::string(s.message()));
      verified += bytes;
    }
  }
  int64_t totalBytes = 0;
  for (const checkpoint::ShardFile &f : m.files())
    totalBytes += f.bytes();
  std::vector<int> shards(m.tensors_size(), 0);
  for (const checkpoint::ShardEntry &e : m.entries())
    ++shards[e.tensor()];
  if (json) {
    nlohmann::json out;
    out["dir"] = ckpt->dir;
    out["step"] = m.step();
    out["model"] = {{"name", m.model().name()},
                    {"source", m.model().source()},
                    {"graph_hash", m.model().graph_hash()},
                    {"num_parameters", m.model().num_parameters()}};
    out["plan"] = m.plan_knobs();
    out["world_size"] = m.world_size();
    out["bytes"] = totalBytes;
    out["run"] = {{"seed", m.run().seed()},
                  {"optimizer", m.run().optimizer()},
                  {"global_batch", m.run().global_batch()},
                  {"data_path", m.run().data_path()},
                  {"init_from", m.run().init_from()}};
    nlohmann::json tensors = nlohmann::json::array();
    for (int i = 0; i < m.tensors_size(); ++i) {
      const checkpoint::TensorInfo &t = m.tensors(i);
      tensors.push_back(
          {{"name", t.name()},
           {"state", t.state()},
           {"dtype", plan::DType_Name(static_cast<plan::DType>(t.dtype()))},
           {"shape", std::vector<int64_t>(t.global_shape().begin(),
                                          t.global_shape().end())},
           {"shards", shards[i]}});
    }
    if (m.has_loss_scale())
      out["loss_scale"] = {{"scale", m.loss_scale().scale()},
                           {"good_steps", m.loss_scale().good_steps()},
                           {"updates", m.loss_scale().updates()}};
    out["tensors"] = tensors;
    out["files"] = m.files_size();
    out["integrity"] = !verify ? "not verified"
                       : problems.empty() ? "ok"
                                          : "corrupt";
    out["problems"] = problems;
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << absl::StrFormat(
        "checkpoint %s\n  step %d, written by %s on %d rank(s), %d file(s), "
        "%.2f MB\n  model %s (%s), %d parameters, graph %s\n  run: seed %d, "
        "optimizer %s, global batch %d%s%s\n",
        ckpt->dir, m.step(), m.plan_knobs(), m.world_size(), m.files_size(),
        totalBytes / 1e6, m.model().name(), m.model().source(),
        m.model().num_parameters(), m.model().graph_hash(), m.run().seed(),
        m.run().optimizer(), m.run().global_batch(),
        m.run().data_path().empty() ? ", synthetic data"
                                    : ", data " + m.run().data_path(),
        m.run().init_from().empty() ? ""
                                    : ", started from " + m.run().init_from());
    if (m.has_loss_scale())
      std::cout << absl::StrFormat(
          "  loss scale %g, %d step(s) since the last overflow, %d update(s) "
          "applied (%d skipped)\n",
          m.loss_scale().scale(), m.loss_scale().good_steps(),
          m.loss_scale().updates(), m.step() - m.loss_scale().updates());
    std::cout << absl::StrFormat("  %-40s %-11s %-8s %-16s %s\n", "tensor",
                                 "state", "dtype", "shape", "shards");
    for (int i = 0; i < m.tensors_size(); ++i) {
      const checkpoint::TensorInfo &t = m.tensors(i);
      std::cout << absl::StrFormat(
          "  %-40s %-11s %-8s %-16s %d\n", t.name(),
          t.state().empty() ? "parameter" : t.state(),
          plan::DType_Name(static_cast<plan::DType>(t.dtype())),
          shapeText(t.global_shape()), shards[i]);
    }
    if (!verify)
      std::cout << "integrity: not verified (--no-verify)\n";
    else if (problems.empty())
      std::cout << absl::StrFormat("integrity: ok (%d entries, %.2f MB "
                                   "read back against their checksums)\n",
                                   m.entries_size(), verified / 1e6);
    else
      for (const std::string &p : problems)
        std::cout << "integrity: " << p << "\n";
  }
  if (!problems.empty()) {
    std::cerr << "cleave: error: " << problems.front() << "\n";
    return 1;
  }
  return 0;
}

int exportCheckpoint(const std::string &dir, const std::string &out) {
  absl::StatusOr<checkpoint::Checkpoint> ckpt = checkpoint::openCheckpoint(dir);
  if (!ckpt.ok())
    return error(ckpt.status(), absl::IsDataLoss(ckpt.status()) ? 1 : 2);
  const checkpoint::Manifest &m = ckpt->manifest;
  std::vector<checkpoint::SafeTensorOut> tensors;
  const checkpoint::Checkpoint &c = *ckpt;
  // A 16-bit parameter's fp32 master weights (ZeRO under mixed precision) are
  // exported in its place: the exact values the optimizer holds.
  std::map<std::string, int> masters;
  int aliases = 0;
  for (int i = 0; i < m.tensors_size(); ++i)
    if (m.tensors(i).state() == "master" &&
        m.tensors(i).dtype() == plan::F32)
      masters[m.tensors(i).name()] = i;
  for (int j = 0; j < m.tensors_size(); ++j) {
    if (!m.tensors(j).state().empty())
      continue;
    int i = j;
    bool half = m.tensors(j).dtype() == plan::BF16 ||
                m.tensors(j).dtype() == plan::F16;
    if (half && masters.count(m.tensors(j).name()))
      i = masters[m.tensors(j).name()];
    const checkpoint::TensorInfo &t = m.tensors(i);
    if (t.dtype() != plan::F32)
      return error(absl::InvalidArgumentError(absl::StrCat(
                       "tensor '", t.name(), "' is ",
                       plan::DType_Name(static_cast<plan::DType>(t.dtype())),
                       " with no fp32 master weights")),
                   1);
    checkpoint::SafeTensorOut o;
    o.name = t.name();
    o.shape.assign(t.global_shape().begin(), t.global_shape().end());
    o.values = [&c, i]() -> absl::StatusOr<std::vector<float>> {
      const checkpoint::TensorInfo &t = c.manifest.tensors(i);
      checkpoint::Box whole;
      whole.origin.assign(t.global_shape_size(), 0);
      whole.extent.assign(t.global_shape().begin(), t.global_shape().end());
      std::vector<float> values(static_cast<size_t>(whole.numElements()));
      if (absl::Status s = checkpoint::readBox(
              c, i, whole, reinterpret_cast<char *>(values.data()));
          !s.ok())
        return s;
      return values;
    };
    // A tied parameter under each of its names, as PyTorch's state_dict
    // lists it, so that a strict load needs no copying by hand.
    for (const std::string &alias : m.tensors(j).aliases()) {
      checkpoint::SafeTensorOut copy = o;
      copy.name = alias;
      tensors.push_back(std::move(copy));
      ++aliases;
    }
    tensors.push_back(std::move(o));
  }
  std::set<std::string> names;
  for (const checkpoint::SafeTensorOut &t : tensors)
    if (!names.insert(t.name).second)
      return error(absl::InvalidArgumentError(absl::StrCat(
                       "two tensors would be exported as '", t.name,
                       "' (a tied parameter's alias names another)")),
                   1);
  std::map<std::string, std::string> metadata = {
      {"format", "pt"},
      {"producer", "cleave"},
      {"model", m.model().name()},
      {"source", m.model().source()},
      {"step", std::to_string(m.step())}};
  if (absl::Status s = checkpoint::writeSafeTensors(out, tensors, metadata);
      !s.ok())
    return error(s, 1);
  std::cout << "exported " << tensors.size() - aliases
            << " parameters of step " << m.step() << " to " << out;
  if (aliases)
    std::cout << " (and " << aliases << " tied alias"
              << (aliases == 1 ? "" : "es") << ")";
  std::cout << "\n";
  return 0;
}

namespace {

/// The floating-point initializers of an ONNX model, as fp32.
absl::StatusOr<std::vector<checkpoint::SafeTensorOut>>
onnxWeights(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError("no such file");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in))
    return absl::InvalidArgumentError("not an ONNX model (it does not parse)");
  std::vector<checkpoint::SafeTensorOut> out;
  for (const onnx::TensorProto &t : model.graph().initializer()) {
    int32_t type = t.data_type();
    if (type != onnx::TensorProto::FLOAT && type != onnx::TensorProto::DOUBLE)
      continue;
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      return absl::UnimplementedError(absl::StrCat(
          "initializer '", t.name(),
          "' keeps its data in an external file, which --init-from does not "
          "read"));
    checkpoint::SafeTensorOut o;
    o.name = t.name();
    int64_t n = 1;
    for (int64_t d : t.dims()) {
      o.shape.push_back(d);
      n *= d;
    }
    std::vector<float> values(static_cast<size_t>(n));
    if (type == onnx::TensorProto::FLOAT) {
      if (t.has_raw_data() && int64_t(t.raw_data().size()) == 4 * n)
        std::memcpy(values.data(), t.raw_data().data(), 4 * n);
      else if (t.float_data_size() == n)
        std::copy(t.float_data().begin(), t.float_data().end(),
                  values.begin());
      else
        return absl::InvalidArgumentError(absl::StrCat(
            "initializer '", t.name(), "' holds no data for its ", n,
            " elements"));
    } else {
      if (t.has_raw_data() && int64_t(t.raw_data().size()) == 8 * n) {
        for (int64_t i = 0; i < n; ++i) {
          double d;
          std::memcpy(&d, t.raw_data().data() + 8 * i, 8);
          values[i] = static_cast<float>(d);
        }
      } else if (t.double_data_size() == n) {
        for (int64_t i = 0; i < n; ++i)
          values[i] = static_cast<float>(t.double_data(i));
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "initializer '", t.name(), "' holds no data for its ", n,
            " elements"));
      }
    }
    auto shared = std::make_shared<std::vector<float>>(std::move(values));
    o.values = [shared]() -> absl::StatusOr<std::vector<float>> {
      return *shared;
    };
    out.push_back(std::move(o));
  }
  return out;
}

} // namespace

absl::StatusOr<std::string> weightsForWorkers(const std::string &path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return absl::NotFoundError("no such file");
  std::string absolute = std::filesystem::absolute(path, ec).string();
  bool isOnnx = path.size() > 5 && path.substr(path.size() - 5) == ".onnx";
  if (!isOnnx) {
    absl::StatusOr<checkpoint::SafeTensorsReader> reader =
        checkpoint::SafeTensorsReader::open(absolute);
    if (!reader.ok())
      return reader.status();
    return absolute;
  }
  absl::StatusOr<std::vector<checkpoint::SafeTensorOut>> weights =
      onnxWeights(path);
  if (!weights.ok())
    return weights.status();
  std::string out = (std::filesystem::temp_directory_path() /
                     ("cleave-init-" + std::to_string(getpid()) +
                      ".safetensors"))
                        .string();
  if (absl::Status s = checkpoint::writeSafeTensors(
          out, *weights, {{"source", absolute}});
      !s.ok())
    return s;
  return out;
}

int runCheckpoint(const CheckpointArgs &a) {
  if (a.args.size() != 2 || (a.args[0] != "inspect" && a.args[0] != "export")) {
    std::cerr << "cleave: error: usage: cleave checkpoint inspect DIR [--json] "
                 "[--no-verify] | cleave checkpoint export DIR -o "
                 "FILE.safetensors\n";
    return 2;
  }
  if (a.args[0] == "inspect")
    return inspectCheckpoint(a.args[1], a.json, !a.noVerify);
  if (a.output.empty()) {
    std::cerr << "cleave: error: checkpoint export needs -o FILE.safetensors\n";
    return 2;
  }
  if (int code = checkOutputPath(a.output, "-o"))
    return code;
  return exportCheckpoint(a.args[1], a.output);
}

} // namespace cleave::tool
