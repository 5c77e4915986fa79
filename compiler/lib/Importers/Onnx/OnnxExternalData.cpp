//===- OnnxExternalData.cpp - Initializers stored beside the model --------===//

#include "OnnxExternalData.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <fstream>
#include <set>

using onnx::TensorProto;

namespace cleave::onnx_import {

namespace {

/// Bytes of one element as ONNX stores raw data, 0 for types raw data
/// cannot hold (strings).
int64_t rawElementBytes(int32_t dtype) {
  switch (dtype) {
  case TensorProto::DOUBLE:
  case TensorProto::INT64:
  case TensorProto::UINT64:
  case TensorProto::COMPLEX64:
    return 8;
  case TensorProto::COMPLEX128:
    return 16;
  case TensorProto::FLOAT:
  case TensorProto::INT32:
  case TensorProto::UINT32:
    return 4;
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
  case TensorProto::INT16:
  case TensorProto::UINT16:
    return 2;
  case TensorProto::INT8:
  case TensorProto::UINT8:
  case TensorProto::BOOL:
    return 1;
  default:
    return 0;
  }
}

llvm::Error fail(const TensorProto &t, const llvm::Twine &message) {
  return llvm::createStringError("initializer '" + t.name() +
                                 "': " + message);
}

struct Entry {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
};

llvm::Expected<Entry> entryOf(const TensorProto &t) {
  Entry e;
  for (const onnx::StringStringEntryProto &kv : t.external_data()) {
    auto number = [&](int64_t &out) -> llvm::Error {
      if (llvm::StringRef(kv.value()).getAsInteger(10, out) || out < 0)
        return fail(t, "external data " + kv.key() + " '" + kv.value() +
                           "' is not a non-negative integer");
      return llvm::Error::success();
    };
    if (kv.key() == "location")
      e.location = kv.value();
    else if (kv.key() == "offset") {
      if (llvm::Error err = number(e.offset))
        return std::move(err);
    } else if (kv.key() == "length") {
      if (llvm::Error err = number(e.length))
        return std::move(err);
    }
  }
  if (e.location.empty())
    return fail(t, "its data is external but names no location");
  // ONNX's rule: the data lives in the model's folder or below it.
  llvm::StringRef loc(e.location);
  if (llvm::sys::path::is_absolute(loc))
    return fail(t, "external data location '" + e.location +
                       "' is absolute; ONNX requires a path relative to the "
                       "model's folder");
  for (auto it = llvm::sys::path::begin(loc), end = llvm::sys::path::end(loc);
       it != end; ++it)
    if (*it == "..")
      return fail(t, "external data location '" + e.location +
                         "' leaves the model's folder");
  return e;
}

} // namespace

llvm::Expected<ExternalDataReport> loadExternalData(onnx::GraphProto &graph,
                                                    llvm::StringRef modelDir) {
  ExternalDataReport report;
  std::set<std::string> missing;
  for (TensorProto &t : *graph.mutable_initializer()) {
    if (t.data_location() != TensorProto::EXTERNAL)
      continue;
    llvm::Expected<Entry> entry = entryOf(t);
    if (!entry)
      return entry.takeError();
    llvm::SmallString<256> path(modelDir);
    llvm::sys::path::append(path, entry->location);
    if (!llvm::sys::fs::exists(path)) {
      missing.insert(entry->location);
      ++report.tensorsWithoutData;
      continue;
    }
    uint64_t fileSize = 0;
    if (std::error_code ec = llvm::sys::fs::file_size(path, fileSize))
      return fail(t, "cannot read external data file '" + entry->location +
                         "': " + ec.message());
    int64_t elements = 1;
    for (int64_t d : t.dims()) {
      if (d < 0)
        return fail(t, "negative dimension " + llvm::Twine(d));
      elements *= d;
    }
    int64_t width = rawElementBytes(t.data_type());
    if (width == 0)
      return fail(t, "external data of data type " +
                         llvm::Twine(t.data_type()) + " is not supported");
    int64_t expected = elements * width;
    int64_t length = entry->length < 0 ? expected : entry->length;
    if (length != expected)
      return fail(t, "external data length " + llvm::Twine(length) +
                         " does not hold the " + llvm::Twine(elements) +
                         " elements of its dims (" + llvm::Twine(expected) +
                         " bytes)");
    if (uint64_t(entry->offset) > fileSize ||
        uint64_t(length) > fileSize - uint64_t(entry->offset))
      return fail(t, "external data at offset " + llvm::Twine(entry->offset) +
                         ", " + llvm::Twine(length) + " bytes, runs past the "
                         "end of '" + entry->location + "' (" +
                         llvm::Twine(fileSize) + " bytes)");
    std::ifstream in(std::string(path), std::ios::binary);
    std::string *raw = t.mutable_raw_data();
    raw->resize(length);
    in.seekg(entry->offset);
    in.read(raw->data(), length);
    if (!in || in.gcount() != length)
      return fail(t, "cannot read " + llvm::Twine(length) +
                         " bytes of external data from '" + entry->location +
                         "'");
    t.clear_external_data();
    t.set_data_location(TensorProto::DEFAULT);
    ++report.tensorsRead;
    report.bytesRead += length;
  }
  report.missingFiles.assign(missing.begin(), missing.end());
  return report;
}

} // namespace cleave::onnx_import
