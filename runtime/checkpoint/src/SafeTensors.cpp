//===- SafeTensors.cpp - Whole tensors in the safetensors format -----------===//

#include "cleave/runtime/checkpoint/SafeTensors.h"

#include "cleave/runtime/checkpoint/Files.h"
#include "cleave/runtime/comm/Bfloat16.h"
#include "cleave/runtime/comm/Float16.h"

#include "absl/strings/str_cat.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <sys/stat.h>

namespace cleave::checkpoint {

namespace {

int64_t dtypeSize(const std::string &dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64")
    return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32")
    return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16")
    return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" ||
      dtype == "F8_E5M2")
    return 1;
  return 0;
}

} // namespace

absl::StatusOr<SafeTensorsReader>
SafeTensorsReader::open(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  if (!S_ISREG(st.st_mode))
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a file"));
  char lengthBytes[8];
  if (absl::Status s = readAt(path, 0, 8, lengthBytes, "the header length");
      !s.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a safetensors file (shorter than 8 bytes)"));
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= uint64_t(static_cast<unsigned char>(lengthBytes[i])) << (8 * i);
  if (length > uint64_t(st.st_size) - 8 || length > (uint64_t(100) << 20))
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a safetensors file (a header of ", length,
        " bytes in a file of ", st.st_size, ")"));
  std::string header(length, '\0');
  if (absl::Status s = readAt(path, 8, length, header.data(), "the header");
      !s.ok())
    return s;
  nlohmann::json json = nlohmann::json::parse(header, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a safetensors file (the header is not a JSON object)"));
  SafeTensorsReader reader;
  reader.path_ = path;
  int64_t dataStart = 8 + static_cast<int64_t>(length);
  for (auto it = json.begin(); it != json.end(); ++it) {
    const std::string &name = it.key();
    const nlohmann::json &v = it.value();
    if (name == "__metadata__") {
      if (v.is_object())
        for (auto m = v.begin(); m != v.end(); ++m)
          if (m.value().is_string())
            reader.metadata_[m.key()] = m.value().get<std::string>();
      continue;
    }
    std::string where = absl::StrCat(path, ": tensor '", name, "'");
    if (!v.is_object() || !v.contains("dtype") || !v["dtype"].is_string() ||
        !v.contains("shape") || !v["shape"].is_array() ||
        !v.contains("data_offsets") || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2)
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": needs dtype, shape and data_offsets [begin, end]"));
    SafeTensorInfo t;
    t.name = name;
    t.dtype = v["dtype"].get<std::string>();
    int64_t elements = 1;
    for (const nlohmann::json &d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": a dimension is not a non-negative integer"));
      t.shape.push_back(d.get<int64_t>());
      elements *= t.shape.back();
    }
    const nlohmann::json &offsets = v["data_offsets"];
    if (!offsets[0].is_number_integer() || !offsets[1].is_number_integer())
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": data_offsets are not integers"));
    t.begin = dataStart + offsets[0].get<int64_t>();
    t.end = dataStart + offsets[1].get<int64_t>();
    int64_t size = dtypeSize(t.dtype);
    if (size == 0)
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": unknown dtype '", t.dtype, "'"));
    if (t.begin < dataStart || t.end < t.begin || t.end > st.st_size)
      return absl::DataLossError(absl::StrCat(
          where, ": its data_offsets lie outside the file (truncated?)"));
    if (t.end - t.begin != elements * size)
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": ", t.end - t.begin, " bytes of data for ", elements, " ",
          t.dtype, " elements"));
    reader.tensors_.push_back(std::move(t));
  }
  return reader;
}

const SafeTensorInfo *SafeTensorsReader::find(const std::string &name) const {
  for (const SafeTensorInfo &t : tensors_)
    if (t.name == name)
      return &t;
  return nullptr;
}

absl::StatusOr<std::vector<float>>
SafeTensorsReader::readF32(const SafeTensorInfo &t) const {
  std::string bytes(static_cast<size_t>(t.end - t.begin), '\0');
  if (absl::Status s = readAt(path_, t.begin, t.end - t.begin, bytes.data(),
                              absl::StrCat("tensor '", t.name, "'"));
      !s.ok())
    return s;
  int64_t size = dtypeSize(t.dtype);
  std::vector<float> out(bytes.size() / size);
  const char *p = bytes.data();
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.dtype == "F32") {
      std::memcpy(&out[i], p + 4 * i, 4);
    } else if (t.dtype == "F64") {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      out[i] = static_cast<float>(d);
    } else if (t.dtype == "F16" || t.dtype == "BF16") {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = t.dtype == "F16" ? comm::f16ToFloat(h) : comm::bf16ToFloat(h);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": tensor '", t.name, "' is ", t.dtype,
          "; weights must be F32, F16, BF16 or F64"));
    }
  }
  return out;
}

absl::Status
writeSafeTensors(const std::string &path,
                 const std::vector<SafeTensorOut> &tensors,
                 const std::map<std::string, std::string> &metadata) {
  // nlohmann::json orders an object's keys; the data follow in that order.
  std::map<std::string, const SafeTensorOut *> ordered;
  for (const SafeTensorOut &t : tensors)
    if (!ordered.emplace(t.name, &t).second)
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", t.name, "' is given twice"));
  nlohmann::json header = nlohmann::json::object();
  int64_t offset = 0;
  for (const auto &[name, t] : ordered) {
    int64_t elements = 1;
    for (int64_t d : t->shape)
      elements *= d;
    header[name] = {{"dtype", "F32"},
                    {"shape", t->shape},
                    {"data_offsets", {offset, offset + 4 * elements}}};
    offset += 4 * elements;
  }
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::string text = header.dump();
  // The data start 8-byte aligned: the header is padded with spaces.
  while ((8 + text.size()) % 8 != 0)
    text.push_back(' ');
  std::string temp = path + ".tmp";
  absl::StatusOr<OutputFile> out = OutputFile::create(temp);
  if (!out.ok())
    return out.status();
  char lengthBytes[8];
  for (int i = 0; i < 8; ++i)
    lengthBytes[i] = static_cast<char>((uint64_t(text.size()) >> (8 * i)) & 0xff);
  absl::Status s = out->append(lengthBytes, 8, "the header");
  if (s.ok())
    s = out->append(text.data(), text.size(), "the header");
  for (const auto &[name, t] : ordered) {
    if (!s.ok())
      break;
    absl::StatusOr<std::vector<float>> values = t->values();
    if (!values.ok()) {
      s = values.status();
      break;
    }
    s = out->append(values->data(), 4 * values->size(),
                    absl::StrCat("tensor '", name, "'"));
  }
  if (s.ok())
    s = out->sync();
  std::error_code ec;
  if (!s.ok()) {
    std::filesystem::remove(temp, ec);
    return s;
  }
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    return absl::InternalError(
        absl::StrCat(path, ": cannot rename ", temp, " into place"));
  }
  return absl::OkStatus();
}

} // namespace cleave::checkpoint
