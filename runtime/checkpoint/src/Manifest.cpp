//===- Manifest.cpp - The checkpoint manifest file -------------------------===//

#include "cleave/runtime/checkpoint/Manifest.h"

#include "cleave/runtime/checkpoint/Files.h"
#include "cleave/runtime/plan/PlanIO.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace cleave::checkpoint {

namespace {

constexpr char kMagic[8] = {'C', 'L', 'E', 'A', 'V', 'E', 'C', 'K'};
constexpr size_t kHeaderBytes = 28;

template <typename T> void putLE(std::string &out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

template <typename T> T getLE(const char *p) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<T>(static_cast<unsigned char>(p[i])) << (8 * i);
  return value;
}

} // namespace

std::string serializeManifest(const Manifest &manifest) {
  Manifest copy = manifest;
  copy.set_format_version(kFormatVersion);
  std::string payload;
  {
    google::protobuf::io::StringOutputStream stream(&payload);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    copy.SerializeToCodedStream(&coded);
  }
  std::string out(kMagic, sizeof(kMagic));
  putLE<uint32_t>(out, kFormatVersion);
  putLE<uint64_t>(out, payload.size());
  putLE<uint64_t>(out, hashBytes(payload.data(), payload.size()));
  return out + payload;
}

absl::StatusOr<Manifest> parseManifest(const std::string &bytes,
                                       const std::string &path) {
  if (bytes.size() < sizeof(kMagic) ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a cleave checkpoint manifest (no CLEAVECK header)"));
  if (bytes.size() < kHeaderBytes)
    return absl::DataLossError(
        absl::StrCat(path, ": truncated manifest: ", bytes.size(), " bytes"));
  uint32_t version = getLE<uint32_t>(bytes.data() + 8);
  if (version != kFormatVersion)
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": checkpoint format version ", version,
        " is not supported (this cleave reads version ", kFormatVersion, ")"));
  uint64_t length = getLE<uint64_t>(bytes.data() + 12);
  uint64_t hash = getLE<uint64_t>(bytes.data() + 20);
  if (bytes.size() - kHeaderBytes != length)
    return absl::DataLossError(absl::StrCat(
        path, ": corrupt manifest: the header announces ", length,
        " bytes of payload, the file holds ", bytes.size() - kHeaderBytes));
  const char *payload = bytes.data() + kHeaderBytes;
  if (hashBytes(payload, length) != hash)
    return absl::DataLossError(absl::StrCat(
        path, ": corrupt manifest: the payload does not match its checksum"));
  Manifest manifest;
  if (!manifest.ParseFromArray(payload, static_cast<int>(length)))
    return absl::DataLossError(
        absl::StrCat(path, ": corrupt manifest: the payload does not parse"));
  if (absl::Status s = validateManifest(manifest); !s.ok())
    return absl::DataLossError(
        absl::StrCat(path, ": invalid manifest: ", s.message()));
  return manifest;
}

absl::StatusOr<Manifest> readManifestFile(const std::string &path) {
  absl::StatusOr<std::string> bytes = readWholeFile(path);
  if (!bytes.ok())
    return bytes.status();
  return parseManifest(*bytes, path);
}

std::string tensorKey(const TensorInfo &tensor) {
  return tensor.state().empty() ? tensor.name()
                                : tensor.name() + "." + tensor.state();
}

absl::StatusOr<Manifest> mergeManifests(const Manifest &base,
                                        const std::vector<Manifest> &parts) {
  Manifest out = base;
  out.clear_tensors();
  out.clear_files();
  out.clear_entries();
  std::map<std::string, int> index;
  for (const Manifest &part : parts) {
    std::vector<int> tensorMap;
    for (const TensorInfo &t : part.tensors()) {
      auto [it, inserted] = index.emplace(tensorKey(t), out.tensors_size());
      if (inserted) {
        *out.add_tensors() = t;
      } else {
        const TensorInfo &seen = out.tensors(it->second);
        if (seen.dtype() != t.dtype() ||
            !std::equal(seen.global_shape().begin(), seen.global_shape().end(),
                        t.global_shape().begin(), t.global_shape().end()))
          return absl::InternalError(absl::StrCat(
              "tensor '", tensorKey(t),
              "': two ranks give it different shapes or dtypes"));
      }
      tensorMap.push_back(it->second);
    }
    std::vector<int> fileMap;
    for (const ShardFile &f : part.files()) {
      fileMap.push_back(out.files_size());
      *out.add_files() = f;
    }
    for (const ShardEntry &e : part.entries()) {
      ShardEntry copy = e;
      if (e.tensor() < 0 || e.tensor() >= int(tensorMap.size()) ||
          e.file() < 0 || e.file() >= int(fileMap.size()))
        return absl::InternalError("a rank's manifest refers past its lists");
      copy.set_tensor(tensorMap[e.tensor()]);
      copy.set_file(fileMap[e.file()]);
      *out.add_entries() = copy;
    }
  }
  // Tensors in name order, a parameter before its states: the same
  // manifest whatever order the ranks' parts came in.
  std::vector<int> order(out.tensors_size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const TensorInfo &x = out.tensors(a), &y = out.tensors(b);
    return std::tie(x.name(), x.state()) < std::tie(y.name(), y.state());
  });
  std::vector<int> newIndex(order.size());
  Manifest sorted = out;
  sorted.clear_tensors();
  for (size_t i = 0; i < order.size(); ++i) {
    newIndex[order[i]] = static_cast<int>(i);
    *sorted.add_tensors() = out.tensors(order[i]);
  }
  for (ShardEntry &e : *sorted.mutable_entries())
    e.set_tensor(newIndex[e.tensor()]);
  if (absl::Status s = validateManifest(sorted); !s.ok())
    return s;
  return sorted;
}

absl::Status validateManifest(const Manifest &manifest) {
  std::vector<int64_t> covered(manifest.tensors_size(), 0);
  for (int i = 0; i < manifest.entries_size(); ++i) {
    const ShardEntry &e = manifest.entries(i);
    if (e.tensor() < 0 || e.tensor() >= manifest.tensors_size() ||
        e.file() < 0 || e.file() >= manifest.files_size())
      return absl::InvalidArgumentError(
          absl::StrCat("entry ", i, " refers to no tensor or file"));
    const TensorInfo &t = manifest.tensors(e.tensor());
    std::string what = absl::StrCat("tensor '", tensorKey(t), "'");
    int rank = t.global_shape_size();
    if (e.origin_size() != rank || e.extent_size() != rank)
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": an entry's box has the wrong rank"));
    int64_t elements = 1;
    for (int d = 0; d < rank; ++d) {
      if (e.origin(d) < 0 || e.extent(d) < 0 ||
          e.origin(d) + e.extent(d) > t.global_shape(d))
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": an entry's box leaves the tensor along dimension ", d));
      elements *= e.extent(d);
    }
    if (elements * plan::dtypeBytes(static_cast<plan::DType>(t.dtype())) !=
        e.bytes())
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": an entry of ", e.bytes(), " bytes holds ", elements,
          " elements"));
    const ShardFile &f = manifest.files(e.file());
    if (e.offset() < 0 || e.offset() + e.bytes() > f.bytes())
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": an entry lies past the end of ", f.path()));
    covered[e.tensor()] += elements;
  }
  // The writers' boxes are disjoint (one writer per box of a regular
  // split), so a count equal to the tensor's size means the tensor is
  // held whole.
  for (int i = 0; i < manifest.tensors_size(); ++i) {
    const TensorInfo &t = manifest.tensors(i);
    int64_t elements = 1;
    for (int64_t d : t.global_shape())
      elements *= d;
    if (covered[i] != elements)
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", tensorKey(t), "': its entries hold ", covered[i],
          " of its ", elements, " elements"));
  }
  return absl::OkStatus();
}

} // namespace cleave::checkpoint
