//===- Cluster.cpp - Cluster fields, overrides, validation and files ------===//
//
// One table lists every field once, with its key, unit and accessor; the
// override syntax, the file reader, the writer and the help text all walk
// it, so a new field needs one line here and one in the docs.
//
//===----------------------------------------------------------------------===//

#include "cleave/cost_model/Cluster.h"
#include "Strings.h"

#include "KeyValueText.h"
#include "cleave/cost_model/Quantity.h"

#include <algorithm>
#include <fstream>
#include <map>

namespace cleave::cost {

double DeviceSpec::peakFlops(DType type) const {
  switch (type) {
  case DType::Fp32:
    return peakFp32;
  case DType::Tf32:
    return peakTf32;
  case DType::Bf16:
    return peakBf16;
  case DType::Fp16:
    return peakFp16;
  case DType::Fp8:
    return peakFp8;
  }
  return 0;
}

namespace {

constexpr std::pair<LinkKind, std::string_view> kLinkKinds[] = {
    {LinkKind::NvSwitch, "nvswitch"},
    {LinkKind::NvLink, "nvlink"},
    {LinkKind::Pcie, "pcie"},
    {LinkKind::SharedMemory, "shared-memory"}};

enum class FieldKind { Real, Integer, Text, Link };

struct Field {
  std::string_view key;
  FieldKind kind;
  Quantity quantity;
  std::string_view help;
  double *(*real)(Cluster &) = nullptr;
  int64_t *(*integer)(Cluster &) = nullptr;
  std::string *(*text)(Cluster &) = nullptr;
};

#define CLEAVE_REAL(KEY, QUANTITY, MEMBER, HELP)                               \
  Field {                                                                      \
    KEY, FieldKind::Real, Quantity::QUANTITY, HELP,                            \
        [](Cluster &c) { return &c.MEMBER; }, nullptr, nullptr                 \
  }
#define CLEAVE_INTEGER(KEY, MEMBER, HELP)                                      \
  Field {                                                                      \
    KEY, FieldKind::Integer, Quantity::Count, HELP, nullptr,                   \
        [](Cluster &c) { return &c.MEMBER; }, nullptr                          \
  }
#define CLEAVE_TEXT(KEY, MEMBER, HELP)                                         \
  Field {                                                                      \
    KEY, FieldKind::Text, Quantity::Number, HELP, nullptr, nullptr,            \
        [](Cluster &c) { return &c.MEMBER; }                                   \
  }

const std::vector<Field> &fields() {
  static const std::vector<Field> table = {
      CLEAVE_TEXT("name", name, "a label for reports"),
      CLEAVE_INTEGER("nodes", nodes, "number of nodes"),
      CLEAVE_INTEGER("devices_per_node", devicesPerNode,
                     "devices (ranks) per node; `devices` is short for it"),
      CLEAVE_INTEGER("cores_per_node", coresPerNode,
                     "compute engines the devices of a node share (CPU "
                     "cores); 0: one per device; `cores` is short for it"),
      CLEAVE_INTEGER("comm_overlaps_compute", commOverlapsCompute,
                     "1: collectives progress beside compute (GPUs); 0: "
                     "only when the device waits on them (CPU ranks)"),
      CLEAVE_TEXT("device.name", device.name, "the device model"),
      CLEAVE_REAL("device.peak_fp32", FlopRate, device.peakFp32,
                  "dense peak, fp32 (CUDA cores)"),
      CLEAVE_REAL("device.peak_tf32", FlopRate, device.peakTf32,
                  "dense peak, tf32 tensor cores; 0 if unsupported"),
      CLEAVE_REAL("device.peak_bf16", FlopRate, device.peakBf16,
                  "dense peak, bf16; 0 if unsupported"),
      CLEAVE_REAL("device.peak_fp16", FlopRate, device.peakFp16,
                  "dense peak, fp16; 0 if unsupported"),
      CLEAVE_REAL("device.peak_fp8", FlopRate, device.peakFp8,
                  "dense peak, fp8; 0 if unsupported"),
      CLEAVE_REAL("device.memory", Bytes, device.memoryBytes,
                  "memory capacity per device"),
      CLEAVE_REAL("device.memory_bandwidth", ByteRate, device.memoryBandwidth,
                  "nominal memory bandwidth per device"),
      Field{"intra_node.kind", FieldKind::Link, Quantity::Number,
            "nvswitch, nvlink, pcie or shared-memory"},
      CLEAVE_REAL("intra_node.bandwidth", ByteRate, intraNode.bandwidth,
                  "per device, per direction (NVLink 3: 300 GB/s)"),
      CLEAVE_REAL("intra_node.latency", Seconds, intraNode.latency,
                  "per hop inside a node"),
      CLEAVE_INTEGER("network.nics_per_node", network.nicsPerNode,
                     "NICs for inter-node traffic per node"),
      CLEAVE_REAL("network.nic_bandwidth", ByteRate, network.nicBandwidth,
                  "nominal line rate per NIC, per direction"),
      CLEAVE_REAL("network.latency", Seconds, network.latency,
                  "per hop between nodes"),
      CLEAVE_REAL("efficiency.gemm_max", Fraction, efficiency.gemmMax,
                  "fraction of peak large GEMMs saturate at"),
      CLEAVE_REAL("efficiency.gemm_half_dim", Number, efficiency.gemmHalfDim,
                  "min(M,N,K) at which the GEMM size factor is 1/2"),
      CLEAVE_REAL("efficiency.gemm_exposed_memory", Fraction,
                  efficiency.gemmExposedMemory,
                  "fraction of a GEMM's memory time not overlapped with "
                  "its math"),
      CLEAVE_REAL("efficiency.gemm_latency", Seconds, efficiency.gemmLatency,
                  "added to every GEMM kernel beyond its rate"),
      CLEAVE_REAL("efficiency.gemm_misaligned", Number,
                  efficiency.gemmMisaligned,
                  "factor on a 16-bit GEMM whose K or N is not a multiple "
                  "of 8 (0: none)"),
      CLEAVE_REAL("efficiency.attention_forward", Fraction,
                  efficiency.attentionForward,
                  "fraction of peak fused attention reaches forward (0: "
                  "priced as its GEMMs)"),
      CLEAVE_REAL("efficiency.attention_backward", Fraction,
                  efficiency.attentionBackward,
                  "fraction of peak fused attention reaches backward (0: "
                  "priced as its GEMMs)"),
      CLEAVE_REAL("efficiency.attention_half_seq_causal", Number,
                  efficiency.attentionHalfSeqCausal,
                  "causal query length at which fused attention runs at "
                  "half its long-sequence rate (0: no fall-off)"),
      CLEAVE_REAL("efficiency.attention_half_seq", Number,
                  efficiency.attentionHalfSeq,
                  "the same without a causal mask"),
      CLEAVE_REAL("efficiency.attention_half_head_dim", Number,
                  efficiency.attentionHalfHeadDim,
                  "head size whose rate, against head size 128's, falls by "
                  "d/(d+x) over 128/(128+x) (0: no fall-off)"),
      CLEAVE_REAL("efficiency.memory", Fraction, efficiency.memory,
                  "achieved over nominal memory bandwidth"),
      CLEAVE_REAL("efficiency.nccl_intra_node", Fraction,
                  efficiency.ncclIntraNode,
                  "NCCL bus bandwidth over intra-node link bandwidth"),
      CLEAVE_REAL("efficiency.nccl_inter_node", Fraction,
                  efficiency.ncclInterNode,
                  "achieved over nominal bandwidth per NIC"),
      CLEAVE_REAL("efficiency.kernel_overhead", Seconds,
                  efficiency.kernelOverhead, "added to every kernel"),
      CLEAVE_REAL("efficiency.collective_overhead", Seconds,
                  efficiency.collectiveOverhead,
                  "added to every collective call"),
      CLEAVE_REAL("efficiency.collective_half_bandwidth_bytes", Bytes,
                  efficiency.collectiveHalfBandwidthBytes,
                  "message size at which collectives reach half their bandwidth"),
  };
  return table;
}

#undef CLEAVE_REAL
#undef CLEAVE_INTEGER
#undef CLEAVE_TEXT

const std::vector<std::string_view> kSections = {"device", "intra_node",
                                                 "network", "efficiency"};

std::string knownKeys() {
  std::vector<std::string_view> keys;
  for (const Field &field : fields())
    keys.push_back(field.key);
  keys.push_back("devices");
  keys.push_back("cores");
  return join(keys, ", ");
}

// Finds the field `key` names. A bare key (no '.') may name a field of any
// section when only one section has it; `allowShort` is off in files,
// where the section header says which section is meant.
absl::StatusOr<const Field *> findField(std::string_view key, bool allowShort) {
  if (key == "devices")
    key = "devices_per_node";
  if (key == "cores")
    key = "cores_per_node";
  for (const Field &field : fields())
    if (field.key == key)
      return &field;
  if (allowShort && !(key.find('.') != std::string_view::npos)) {
    std::vector<const Field *> matches;
    for (const Field &field : fields())
      if (field.key.size() > key.size() &&
          field.key.substr(field.key.size() - key.size()) == key &&
          field.key[field.key.size() - key.size() - 1] == '.')
        matches.push_back(&field);
    if (matches.size() == 1)
      return matches.front();
    if (matches.size() > 1) {
      std::vector<std::string_view> names;
      for (const Field *field : matches)
        names.push_back(field->key);
      return absl::InvalidArgumentError(
          cat("ambiguous key '", key, "' (one of: ", join(names, ", "), ")"));
    }
  }
  return absl::InvalidArgumentError(
      cat("unknown key '", key, "' (known: ", knownKeys(), ")"));
}

absl::Status setField(Cluster &cluster, const Field &field,
                      std::string_view value) {
  auto badValue = [&](std::string_view expected) {
    return absl::InvalidArgumentError(cat("bad value '", value, "' for key '",
                                          field.key, "': expected ", expected));
  };
  switch (field.kind) {
  case FieldKind::Text:
    if (value.empty() || (value.find('#') != std::string_view::npos) ||
        (value.find(',') != std::string_view::npos) ||
        (value.find('\n') != std::string_view::npos))
      return badValue("a non-empty label without '#', ',' or newlines");
    *field.text(cluster) = std::string(value);
    return absl::OkStatus();
  case FieldKind::Link:
    for (const auto &[kind, name] : kLinkKinds) {
      if (name == value) {
        cluster.intraNode.kind = kind;
        return absl::OkStatus();
      }
    }
    return badValue("one of nvswitch, nvlink, pcie, shared-memory");
  case FieldKind::Integer:
  case FieldKind::Real: {
    absl::StatusOr<double> parsed = parseQuantity(value, field.quantity);
    if (!parsed.ok())
      return badValue(quantityExample(field.quantity));
    if (field.kind == FieldKind::Integer)
      *field.integer(cluster) = static_cast<int64_t>(*parsed);
    else
      *field.real(cluster) = *parsed;
    return absl::OkStatus();
  }
  }
  return absl::OkStatus();
}

std::string formatField(const Cluster &cluster, const Field &field) {
  Cluster copy = cluster; // the accessors hand out mutable pointers
  switch (field.kind) {
  case FieldKind::Text:
    return *field.text(copy);
  case FieldKind::Link:
    return std::string(linkKindName(cluster.intraNode.kind));
  case FieldKind::Integer:
    return std::to_string(*field.integer(copy));
  case FieldKind::Real:
    return formatQuantity(*field.real(copy), field.quantity);
  }
  return "";
}

std::string_view sectionOf(std::string_view key) {
  size_t dot = key.find('.');
  return dot == std::string_view::npos ? std::string_view()
                                       : key.substr(0, dot);
}

} // namespace

std::string_view linkKindName(LinkKind kind) {
  for (const auto &[k, name] : kLinkKinds)
    if (k == kind)
      return name;
  return "nvswitch";
}

absl::Status setClusterField(Cluster &cluster, std::string_view key,
                             std::string_view value) {
  absl::StatusOr<const Field *> field =
      findField(strip(key), /*allowShort=*/true);
  if (!field.ok())
    return field.status();
  return setField(cluster, **field, strip(value));
}

absl::Status validateCluster(const Cluster &c) {
  std::vector<std::string> problems;
  auto require = [&](bool ok, std::string_view key, std::string_view what,
                     double got) {
    if (!ok)
      problems.push_back(cat(key, " must be ", what, " (got ", got, ")"));
  };
  const Efficiency &e = c.efficiency;
  require(c.nodes >= 1, "nodes", "at least 1", c.nodes);
  require(c.devicesPerNode >= 1, "devices_per_node", "at least 1",
          c.devicesPerNode);
  require(c.commOverlapsCompute == 0 || c.commOverlapsCompute == 1,
          "comm_overlaps_compute", "0 or 1", c.commOverlapsCompute);
  require(c.device.peakFp32 > 0, "device.peak_fp32", "positive",
          c.device.peakFp32);
  require(c.device.peakTf32 >= 0, "device.peak_tf32", "0 or more",
          c.device.peakTf32);
  require(c.device.peakBf16 >= 0, "device.peak_bf16", "0 or more",
          c.device.peakBf16);
  require(c.device.peakFp16 >= 0, "device.peak_fp16", "0 or more",
          c.device.peakFp16);
  require(c.device.peakFp8 >= 0, "device.peak_fp8", "0 or more",
          c.device.peakFp8);
  require(c.device.memoryBytes > 0, "device.memory", "positive",
          c.device.memoryBytes);
  require(c.device.memoryBandwidth > 0, "device.memory_bandwidth", "positive",
          c.device.memoryBandwidth);
  // A figure unused at this device count is still checked: a negative
  // one is a typo that would surface when the cluster grows.
  if (c.devicesPerNode > 1)
    require(c.intraNode.bandwidth > 0, "intra_node.bandwidth",
            "positive when a node has several devices", c.intraNode.bandwidth);
  else
    require(c.intraNode.bandwidth >= 0, "intra_node.bandwidth", "0 or more",
            c.intraNode.bandwidth);
  require(c.intraNode.latency >= 0, "intra_node.latency", "0 or more",
          c.intraNode.latency);
  if (c.nodes > 1) {
    require(c.network.nicsPerNode >= 1, "network.nics_per_node",
            "at least 1 when there are several nodes", c.network.nicsPerNode);
    require(c.network.nicBandwidth > 0, "network.nic_bandwidth",
            "positive when there are several nodes", c.network.nicBandwidth);
  }
  require(c.network.nicsPerNode >= 0, "network.nics_per_node", "0 or more",
          c.network.nicsPerNode);
  if (c.nodes == 1)
    require(c.network.nicBandwidth >= 0, "network.nic_bandwidth",
            "0 or more", c.network.nicBandwidth);
  require(c.network.latency >= 0, "network.latency", "0 or more",
          c.network.latency);
  auto fraction = [&](double value, std::string_view key) {
    require(value > 0 && value <= 1, key, "in (0, 1]", value);
  };
  fraction(e.gemmMax, "efficiency.gemm_max");
  fraction(e.memory, "efficiency.memory");
  fraction(e.ncclIntraNode, "efficiency.nccl_intra_node");
  fraction(e.ncclInterNode, "efficiency.nccl_inter_node");
  require(e.attentionForward >= 0 && e.attentionForward <= 1,
          "efficiency.attention_forward", "in [0, 1]", e.attentionForward);
  require(e.attentionBackward >= 0 && e.attentionBackward <= 1,
          "efficiency.attention_backward", "in [0, 1]", e.attentionBackward);
  require(e.gemmHalfDim >= 0, "efficiency.gemm_half_dim", "0 or more",
          e.gemmHalfDim);
  require(e.gemmMisaligned >= 0 && e.gemmMisaligned <= 1,
          "efficiency.gemm_misaligned", "in [0, 1]", e.gemmMisaligned);
  require(e.attentionHalfSeqCausal >= 0,
          "efficiency.attention_half_seq_causal", "0 or more",
          e.attentionHalfSeqCausal);
  require(e.attentionHalfSeq >= 0, "efficiency.attention_half_seq",
          "0 or more", e.attentionHalfSeq);
  require(e.attentionHalfHeadDim >= 0, "efficiency.attention_half_head_dim",
          "0 or more", e.attentionHalfHeadDim);
  require(e.gemmExposedMemory >= 0 && e.gemmExposedMemory <= 1,
          "efficiency.gemm_exposed_memory", "in [0, 1]", e.gemmExposedMemory);
  require(e.gemmLatency >= 0, "efficiency.gemm_latency", "0 or more",
          e.gemmLatency);
  require(e.kernelOverhead >= 0, "efficiency.kernel_overhead", "0 or more",
          e.kernelOverhead);
  require(e.collectiveOverhead >= 0, "efficiency.collective_overhead",
          "0 or more", e.collectiveOverhead);
  require(e.collectiveHalfBandwidthBytes >= 0,
          "efficiency.collective_half_bandwidth_bytes", "0 or more",
          e.collectiveHalfBandwidthBytes);
  if (problems.empty())
    return absl::OkStatus();
  return absl::InvalidArgumentError(
      cat("cluster '", c.name, "': ", join(problems, "; ")));
}

absl::StatusOr<Cluster> parseClusterText(std::string_view text,
                                         std::string_view fileName) {
  absl::StatusOr<std::vector<KeyValueLine>> lines =
      readKeyValueText(text, fileName);
  if (!lines.ok())
    return lines.status();
  Cluster cluster;
  std::map<std::string, int> seen;
  bool first = true;
  for (const KeyValueLine &line : *lines) {
    auto error = [&](std::string_view message) {
      return lineError(fileName, line.line, message);
    };
    if (!line.section.empty() && std::find(kSections.begin(), kSections.end(),
                                           line.section) == kSections.end())
      return lineError(fileName, line.sectionLine,
                       cat("unknown section '[", line.section,
                           "]' (known: ", join(kSections, ", "), ")"));
    if (line.section.empty() && line.key == "preset") {
      if (!first)
        return error("'preset' must come before every other key");
      absl::StatusOr<Cluster> preset = clusterPreset(line.value);
      if (!preset.ok())
        return error(messageOf(preset.status()));
      cluster = *std::move(preset);
      first = false;
      continue;
    }
    first = false;
    std::string key =
        line.section.empty() ? line.key : cat(line.section, ".", line.key);
    absl::StatusOr<const Field *> field =
        (line.key.find('.') != std::string_view::npos)
            ? absl::InvalidArgumentError(cat("unknown key '", key,
                                             "' (keys inside a section have no "
                                             "'.')"))
            : findField(key, /*allowShort=*/false);
    if (!field.ok())
      return error(messageOf(field.status()));
    auto [previous, inserted] = seen.emplace((*field)->key, line.line);
    if (!inserted)
      return error(cat("key '", key, "' is set twice (first on line ",
                       previous->second, ")"));
    if (absl::Status status = setField(cluster, **field, line.value);
        !status.ok())
      return error(messageOf(status));
  }
  if (absl::Status status = validateCluster(cluster); !status.ok())
    return absl::InvalidArgumentError(cat(fileName, ": ", status.message()));
  return cluster;
}

absl::StatusOr<Cluster> loadClusterFile(const std::string &path) {
  absl::StatusOr<std::string> text = readTextFile(path);
  if (!text.ok())
    return text.status();
  return parseClusterText(*text, path);
}

absl::StatusOr<Cluster> parseCluster(std::string_view spec) {
  std::vector<std::string_view> parts = split(spec, ',');
  std::string_view base = strip(parts.front());
  auto specError = [&](std::string_view message) {
    return absl::InvalidArgumentError(
        cat("cluster spec '", spec, "': ", message));
  };
  absl::StatusOr<Cluster> cluster = clusterPreset(base);
  if (!cluster.ok()) {
    // Not a preset: a file, if one exists at that path.
    if (std::ifstream(std::string(base)).good())
      cluster = loadClusterFile(std::string(base));
    if (!cluster.ok())
      return specError(messageOf(cluster.status()));
  }
  std::vector<std::string_view> seen;
  for (size_t i = 1; i < parts.size(); ++i) {
    std::string_view part = strip(parts[i]);
    size_t equals = part.find('=');
    if (equals == std::string_view::npos)
      return specError(cat("expected key=value after ',', got '", part, "'"));
    // As a cluster file refuses a key twice (the second would silently win).
    std::string_view key = strip(part.substr(0, equals));
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      return specError(cat("'", key, "' is given twice"));
    seen.push_back(key);
    if (absl::Status status = setClusterField(*cluster, part.substr(0, equals),
                                              part.substr(equals + 1));
        !status.ok())
      return specError(messageOf(status));
  }
  if (absl::Status status = validateCluster(*cluster); !status.ok())
    return specError(messageOf(status));
  return cluster;
}

std::string formatCluster(const Cluster &cluster) {
  std::string out =
      "# cleave cluster file; the format is in docs/cluster-format.md\n";
  std::string_view section;
  for (const Field &field : fields()) {
    std::string_view fieldSection = sectionOf(field.key);
    if (fieldSection != section) {
      out += cat("\n[", fieldSection, "]\n");
      section = fieldSection;
    }
    std::string_view name =
        section.empty() ? field.key : field.key.substr(section.size() + 1);
    out += cat(name, " = ", formatField(cluster, field), "\n");
  }
  return out;
}

std::vector<ClusterFieldInfo> clusterFields() {
  std::vector<ClusterFieldInfo> infos;
  for (const Field &field : fields()) {
    std::string unit = field.kind == FieldKind::Text ? "text"
                       : field.kind == FieldKind::Link
                           ? "link kind"
                           : std::string(quantityExample(field.quantity));
    infos.push_back({std::string(field.key), unit, std::string(field.help)});
  }
  return infos;
}

} // namespace cleave::cost
