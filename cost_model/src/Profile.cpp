//===- Profile.cpp - Measured tables, their interpolation and file format -===//

#include "cleave/cost_model/Profile.h"
#include "Strings.h"

#include "KeyValueText.h"
#include "cleave/cost_model/Quantity.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace cleave::cost {
namespace {

// Where `value` falls on a sorted axis: the two grid indices around it and
// the weight of the upper one, in log space. Values outside the axis are
// clamped to its ends; `clamped` is the value actually interpolated at.
struct AxisPosition {
  size_t lower = 0;
  size_t upper = 0;
  double weight = 0;
  double clamped = 0;
};

AxisPosition locate(const std::vector<int64_t> &axis, double value) {
  AxisPosition pos;
  double lo = static_cast<double>(axis.front());
  double hi = static_cast<double>(axis.back());
  pos.clamped = std::clamp(value, lo, hi);
  if (axis.size() == 1)
    return pos;
  auto it = std::lower_bound(axis.begin(), axis.end(), pos.clamped,
                             [](int64_t a, double v) { return a < v; });
  pos.upper = std::max<size_t>(1, it - axis.begin());
  pos.lower = pos.upper - 1;
  double a = std::log(static_cast<double>(axis[pos.lower]));
  double b = std::log(static_cast<double>(axis[pos.upper]));
  pos.weight = (std::log(pos.clamped) - a) / (b - a);
  return pos;
}

std::string shapeName(int64_t m, int64_t n, int64_t k) {
  return cat(m, "x", n, "x", k);
}

} // namespace

absl::StatusOr<GemmTable> GemmTable::create(std::vector<GemmSample> samples) {
  if (samples.empty())
    return absl::InvalidArgumentError("a GEMM table needs samples");
  std::set<int64_t> ms, ns, ks;
  for (const GemmSample &s : samples) {
    if (s.m <= 0 || s.n <= 0 || s.k <= 0 || !(s.seconds > 0))
      return absl::InvalidArgumentError(
          cat("GEMM sample ", shapeName(s.m, s.n, s.k),
              " needs positive dimensions and time"));
    ms.insert(s.m);
    ns.insert(s.n);
    ks.insert(s.k);
  }
  GemmTable table;
  table.ms_.assign(ms.begin(), ms.end());
  table.ns_.assign(ns.begin(), ns.end());
  table.ks_.assign(ks.begin(), ks.end());
  size_t gridSize = ms.size() * ns.size() * ks.size();
  table.logSeconds_.assign(gridSize, std::nan(""));
  auto index = [&](const std::vector<int64_t> &axis, int64_t v) {
    return static_cast<size_t>(std::lower_bound(axis.begin(), axis.end(), v) -
                               axis.begin());
  };
  for (const GemmSample &s : samples) {
    size_t flat = (index(table.ms_, s.m) * ns.size() + index(table.ns_, s.n)) *
                      ks.size() +
                  index(table.ks_, s.k);
    if (!std::isnan(table.logSeconds_[flat]))
      return absl::InvalidArgumentError(
          cat("GEMM sample ", shapeName(s.m, s.n, s.k), " appears twice"));
    table.logSeconds_[flat] = std::log(s.seconds);
  }
  for (size_t i = 0; i < ms.size(); ++i)
    for (size_t j = 0; j < ns.size(); ++j)
      for (size_t l = 0; l < ks.size(); ++l)
        if (std::isnan(table.logSecondsAt(i, j, l)))
          return absl::InvalidArgumentError(
              cat("GEMM grid point ",
                  shapeName(table.ms_[i], table.ns_[j], table.ks_[l]),
                  " is missing (samples must cover every combination of their "
                  "M, N and K values)"));
  return table;
}

double GemmTable::logSecondsAt(size_t i, size_t j, size_t l) const {
  return logSeconds_[(i * ns_.size() + j) * ks_.size() + l];
}

double GemmTable::seconds(int64_t m, int64_t n, int64_t k) const {
  AxisPosition pm = locate(ms_, static_cast<double>(m));
  AxisPosition pn = locate(ns_, static_cast<double>(n));
  AxisPosition pk = locate(ks_, static_cast<double>(k));
  double logSeconds = 0;
  for (int cm = 0; cm < 2; ++cm) {
    double wm = cm ? pm.weight : 1 - pm.weight;
    size_t i = cm ? pm.upper : pm.lower;
    for (int cn = 0; cn < 2; ++cn) {
      double wn = cn ? pn.weight : 1 - pn.weight;
      size_t j = cn ? pn.upper : pn.lower;
      for (int ck = 0; ck < 2; ++ck) {
        double wk = ck ? pk.weight : 1 - pk.weight;
        size_t l = ck ? pk.upper : pk.lower;
        double w = wm * wn * wk;
        if (w != 0)
          logSeconds += w * logSecondsAt(i, j, l);
      }
    }
  }
  // Outside the grid, keep the FLOP rate of the nearest grid point.
  double flopRatio = (static_cast<double>(m) / pm.clamped) *
                     (static_cast<double>(n) / pn.clamped) *
                     (static_cast<double>(k) / pk.clamped);
  return std::exp(logSeconds) * flopRatio;
}

absl::StatusOr<CollectiveCurve>
CollectiveCurve::create(std::vector<CollectiveSample> samples) {
  if (samples.empty())
    return absl::InvalidArgumentError("a collective curve needs samples");
  std::sort(samples.begin(), samples.end(),
            [](const CollectiveSample &a, const CollectiveSample &b) {
              return a.bytes < b.bytes;
            });
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!(samples[i].bytes > 0) || !(samples[i].seconds > 0))
      return absl::InvalidArgumentError(
          cat("collective sample of ", samples[i].bytes,
              " bytes needs positive size and time"));
    if (i > 0 && samples[i].bytes == samples[i - 1].bytes)
      return absl::InvalidArgumentError(cat(
          "collective sample of ", samples[i].bytes, " bytes appears twice"));
  }
  CollectiveCurve curve;
  curve.samples_ = std::move(samples);
  return curve;
}

double CollectiveCurve::seconds(double bytes) const {
  const CollectiveSample &first = samples_.front();
  const CollectiveSample &last = samples_.back();
  if (bytes <= first.bytes)
    return first.seconds;
  if (bytes >= last.bytes) {
    double marginal = last.seconds / last.bytes;
    if (samples_.size() > 1) {
      const CollectiveSample &prev = samples_[samples_.size() - 2];
      double slope = (last.seconds - prev.seconds) / (last.bytes - prev.bytes);
      if (slope > 0)
        marginal = slope;
    }
    return last.seconds + (bytes - last.bytes) * marginal;
  }
  auto upper = std::lower_bound(
      samples_.begin(), samples_.end(), bytes,
      [](const CollectiveSample &s, double b) { return s.bytes < b; });
  auto lower = upper - 1;
  double w = (std::log(bytes) - std::log(lower->bytes)) /
             (std::log(upper->bytes) - std::log(lower->bytes));
  return std::exp((1 - w) * std::log(lower->seconds) +
                  w * std::log(upper->seconds));
}

const GemmTable *Profile::findGemm(DType type) const {
  auto it = gemm.find(type);
  return it == gemm.end() ? nullptr : &it->second;
}

const CollectiveCurve *Profile::findCollective(const CollectiveKey &key) const {
  auto it = collectives.find(key);
  return it == collectives.end() ? nullptr : &it->second;
}

namespace {

bool parseInteger(std::string_view text, int64_t &value) {
  auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// "[collective all-reduce ranks=16 ranks_per_node=8 concurrent=1]"
absl::StatusOr<CollectiveKey>
parseCollectiveHeader(const std::vector<std::string_view> &words) {
  if (words.size() < 2)
    return absl::InvalidArgumentError(
        "expected '[collective KIND ranks=N ranks_per_node=K]'");
  absl::StatusOr<Collective> kind = parseCollective(words[1]);
  if (!kind.ok())
    return kind.status();
  CollectiveKey key;
  key.kind = *kind;
  for (size_t i = 2; i < words.size(); ++i) {
    size_t equals = words[i].find('=');
    std::string_view name = words[i].substr(0, equals);
    int64_t value = 0;
    if (equals == std::string_view::npos ||
        !parseInteger(words[i].substr(equals + 1), value) || value < 1)
      return absl::InvalidArgumentError(cat(
          "bad value in '", words[i], "': expected a positive whole number"));
    if (name == "ranks")
      key.groupSize = value;
    else if (name == "ranks_per_node")
      key.ranksPerNode = value;
    else if (name == "concurrent")
      key.concurrentGroups = value;
    else
      return absl::InvalidArgumentError(
          cat("unknown attribute '", name,
              "' (known: ranks, ranks_per_node, concurrent)"));
  }
  if (key.groupSize == 0 || key.ranksPerNode == 0)
    return absl::InvalidArgumentError(
        "a collective section needs ranks=N and ranks_per_node=K");
  if (key.ranksPerNode > key.groupSize)
    return absl::InvalidArgumentError("ranks_per_node cannot exceed ranks");
  return key;
}

// "1024x4096x512" -> (m, n, k)
bool parseShape(std::string_view text, GemmSample &sample) {
  std::vector<std::string_view> dims = split(text, 'x');
  return dims.size() == 3 && parseInteger(dims[0], sample.m) &&
         parseInteger(dims[1], sample.n) && parseInteger(dims[2], sample.k);
}

} // namespace

absl::StatusOr<Profile> parseProfileText(std::string_view text,
                                         std::string_view fileName) {
  absl::StatusOr<std::vector<KeyValueLine>> lines =
      readKeyValueText(text, fileName);
  if (!lines.ok())
    return lines.status();

  Profile profile;
  // Samples are gathered per section and checked once all are read; the
  // header line is where a table's errors point.
  std::map<DType, std::pair<int, std::vector<GemmSample>>> gemmSamples;
  std::map<CollectiveKey, std::pair<int, std::vector<CollectiveSample>>>
      collectiveSamples;
  // The line of each sample read, so that a bad or repeated one is reported
  // where it is, not at its table's header.
  std::map<std::tuple<DType, int64_t, int64_t, int64_t>, int> gemmLines;
  std::map<std::pair<CollectiveKey, double>, int> collectiveLines;

  for (const KeyValueLine &line : *lines) {
    auto error = [&](int at, std::string_view message) {
      return lineError(fileName, at, message);
    };
    std::vector<std::string_view> words = split(line.section, ' ');
    if (line.section.empty())
      return error(line.line, "a profile entry needs a section: [bandwidth], "
                              "[gemm DTYPE] or [collective ...]");
    if (words[0] == "bandwidth") {
      struct Entry {
        std::string_view key;
        Quantity quantity;
        std::optional<double> *target;
      };
      Entry entries[] = {
          {"memory", Quantity::ByteRate, &profile.memoryBandwidth},
          {"intra_node_bus", Quantity::ByteRate,
           &profile.intraNodeBusBandwidth},
          {"nic", Quantity::ByteRate, &profile.nicBandwidth},
          {"kernel_overhead", Quantity::Seconds, &profile.kernelOverhead}};
      Entry *entry = nullptr;
      for (Entry &candidate : entries)
        if (candidate.key == line.key)
          entry = &candidate;
      if (!entry)
        return error(line.line, cat("unknown key 'bandwidth.", line.key,
                                    "' (known: memory, intra_node_bus, nic, "
                                    "kernel_overhead)"));
      absl::StatusOr<double> value = parseQuantity(line.value, entry->quantity);
      bool bad =
          !value.ok() ||
          (entry->quantity == Quantity::Seconds ? *value < 0 : !(*value > 0));
      if (bad)
        return error(line.line,
                     cat("bad value '", line.value, "' for key '", line.key,
                         "': expected ", quantityExample(entry->quantity)));
      *entry->target = *value;
    } else if (words[0] == "gemm") {
      if (words.size() != 2)
        return error(line.sectionLine, "expected '[gemm DTYPE]'");
      absl::StatusOr<DType> type = parseDType(words[1]);
      if (!type.ok())
        return error(line.sectionLine, messageOf(type.status()));
      GemmSample sample;
      if (!parseShape(line.key, sample))
        return error(line.line,
                     cat("bad GEMM shape '", line.key, "': expected MxNxK"));
      absl::StatusOr<double> seconds =
          parseQuantity(line.value, Quantity::Seconds);
      if (!seconds.ok())
        return error(line.line,
                     cat("bad time '", line.value, "' for GEMM ", line.key));
      sample.seconds = *seconds;
      if (sample.m <= 0 || sample.n <= 0 || sample.k <= 0 ||
          !(sample.seconds > 0))
        return error(line.line, cat("GEMM sample ", line.key,
                                    " needs positive dimensions and time"));
      auto [first, isNew] = gemmLines.try_emplace(
          {*type, sample.m, sample.n, sample.k}, line.line);
      if (!isNew)
        return error(line.line, cat("GEMM sample ", line.key,
                                    " appears twice (first on line ",
                                    first->second, ")"));
      auto &entry = gemmSamples[*type];
      entry.first = line.sectionLine;
      entry.second.push_back(sample);
    } else if (words[0] == "collective") {
      absl::StatusOr<CollectiveKey> key = parseCollectiveHeader(words);
      if (!key.ok())
        return error(line.sectionLine, messageOf(key.status()));
      absl::StatusOr<double> bytes = parseQuantity(line.key, Quantity::Bytes);
      absl::StatusOr<double> seconds =
          parseQuantity(line.value, Quantity::Seconds);
      if (!bytes.ok() || !seconds.ok())
        return error(line.line, cat("expected 'SIZE = TIME' such as "
                                    "'1 MiB = 45 us', got '",
                                    line.key, " = ", line.value, "'"));
      if (!(*bytes > 0) || !(*seconds > 0))
        return error(line.line, cat("collective sample '", line.key, " = ",
                                    line.value,
                                    "' needs positive size and time"));
      auto [first, isNew] =
          collectiveLines.try_emplace({*key, *bytes}, line.line);
      if (!isNew)
        return error(line.line, cat("collective sample of ", line.key,
                                    " appears twice in this table (first on "
                                    "line ",
                                    first->second, ")"));
      auto &entry = collectiveSamples[*key];
      entry.first = line.sectionLine;
      entry.second.push_back({*bytes, *seconds});
    } else if (words[0] == "compute" && words.size() == 1) {
      // shared_core_efficiency may exceed 1 a little (measurement noise);
      // waiting_rank_load is a share of one core; a collective between
      // compute takes at least its time alone.
      struct ComputeKey {
        const char *name;
        Quantity quantity;
        double low, high;
        bool lowIncluded;
        const char *expected;
        std::optional<double> *target;
      };
      const ComputeKey keys[] = {
          {"shared_core_efficiency", Quantity::Fraction, 0, 2, false,
           "a fraction above 0, like 0.75", &profile.sharedCoreEfficiency},
          {"waiting_rank_load", Quantity::Fraction, 0, 1, true,
           "a fraction from 0 to 1, like 0.4", &profile.waitingRankLoad},
          {"in_step_collective_wait", Quantity::Seconds, 0, 10, true,
           "a time from 0 to 10 s, like 450 us", &profile.inStepCollectiveWait},
          {"in_step_collective_slowdown", Quantity::Number, 1, 1000, true,
           "a factor from 1 to 1000, like 2.5",
           &profile.inStepCollectiveSlowdown},
          {"collective_window_hidden", Quantity::Fraction, 0, 1, true,
           "a fraction from 0 to 1, like 0.2",
           &profile.collectiveWindowHidden}};
      const ComputeKey *key = nullptr;
      for (const ComputeKey &k : keys)
        if (line.key == k.name)
          key = &k;
      if (!key)
        return error(line.line, cat("unknown key 'compute.", line.key,
                                    "' (known: shared_core_efficiency, "
                                    "waiting_rank_load, "
                                    "in_step_collective_wait, "
                                    "in_step_collective_slowdown, "
                                    "collective_window_hidden)"));
      absl::StatusOr<double> value = parseQuantity(line.value, key->quantity);
      bool ok = value.ok() &&
                (key->lowIncluded ? *value >= key->low : *value > key->low) &&
                *value <= key->high;
      if (!ok)
        return error(line.line, cat("bad value '", line.value, "' for key '",
                                    line.key, "': expected ", key->expected));
      *key->target = *value;
    } else {
      return error(line.sectionLine, cat("unknown section '[", line.section,
                                         "]' (known: bandwidth, compute, gemm "
                                         "DTYPE, collective ...)"));
    }
  }

  for (auto &[type, entry] : gemmSamples) {
    absl::StatusOr<GemmTable> table = GemmTable::create(entry.second);
    if (!table.ok())
      return lineError(fileName, entry.first, messageOf(table.status()));
    profile.gemm.emplace(type, *std::move(table));
  }
  for (auto &[key, entry] : collectiveSamples) {
    absl::StatusOr<CollectiveCurve> curve =
        CollectiveCurve::create(entry.second);
    if (!curve.ok())
      return lineError(fileName, entry.first, messageOf(curve.status()));
    profile.collectives.emplace(key, *std::move(curve));
  }
  return profile;
}

absl::StatusOr<Profile> loadProfileFile(const std::string &path) {
  absl::StatusOr<std::string> text = readTextFile(path);
  if (!text.ok())
    return text.status();
  absl::StatusOr<std::vector<KeyValueLine>> lines =
      readKeyValueText(*text, path);
  if (!lines.ok())
    return lines.status();
  // A file with no entry would leave every formula in place while the user
  // believes the machine's measurements are used.
  if (lines->empty())
    return absl::InvalidArgumentError(
        cat(path, ": holds no measurement (write one with `cleave profile`)"));
  return parseProfileText(*text, path);
}

namespace {

// Collective sizes are powers of two in practice; binary units keep them
// exact and readable ("64 MiB" rather than "67.108864 MB").
std::string formatBytes(double bytes) {
  for (auto [scale, unit] :
       {std::pair{1073741824.0, "GiB"}, std::pair{1048576.0, "MiB"},
        std::pair{1024.0, "KiB"}})
    if (bytes >= scale && std::fmod(bytes, scale) == 0)
      return cat(static_cast<int64_t>(bytes / scale), " ", unit);
  return formatQuantity(bytes, Quantity::Bytes);
}

} // namespace

std::string formatProfile(const Profile &profile, std::string_view comment) {
  std::string out;
  if (!comment.empty()) {
    for (std::string_view line : split(comment, '\n'))
      out += line.empty() ? "#\n" : cat("# ", line, "\n");
    out += "\n";
  }

  struct BandwidthEntry {
    std::string_view key;
    Quantity quantity;
    const std::optional<double> &value;
  };
  const BandwidthEntry bandwidths[] = {
      {"memory", Quantity::ByteRate, profile.memoryBandwidth},
      {"intra_node_bus", Quantity::ByteRate, profile.intraNodeBusBandwidth},
      {"nic", Quantity::ByteRate, profile.nicBandwidth},
      {"kernel_overhead", Quantity::Seconds, profile.kernelOverhead}};
  std::string bandwidthLines;
  for (const BandwidthEntry &entry : bandwidths)
    if (entry.value)
      bandwidthLines += cat(entry.key, " = ",
                            formatQuantity(*entry.value, entry.quantity), "\n");
  if (!bandwidthLines.empty())
    out += cat("[bandwidth]\n", bandwidthLines, "\n");
  std::string computeLines;
  if (profile.sharedCoreEfficiency)
    computeLines += cat(
        "shared_core_efficiency = ",
        formatQuantity(*profile.sharedCoreEfficiency, Quantity::Number), "\n");
  if (profile.waitingRankLoad)
    computeLines +=
        cat("waiting_rank_load = ",
            formatQuantity(*profile.waitingRankLoad, Quantity::Number), "\n");
  if (profile.inStepCollectiveWait)
    computeLines += cat("in_step_collective_wait = ",
                        formatQuantity(*profile.inStepCollectiveWait,
                                       Quantity::Seconds),
                        "\n");
  if (profile.inStepCollectiveSlowdown)
    computeLines += cat("in_step_collective_slowdown = ",
                        formatQuantity(*profile.inStepCollectiveSlowdown,
                                       Quantity::Number),
                        "\n");
  if (profile.collectiveWindowHidden)
    computeLines += cat("collective_window_hidden = ",
                        formatQuantity(*profile.collectiveWindowHidden,
                                       Quantity::Number),
                        "\n");
  if (!computeLines.empty())
    out += cat("[compute]\n", computeLines, "\n");

  for (const auto &[type, table] : profile.gemm) {
    out += cat("[gemm ", dtypeName(type), "]\n");
    for (int64_t m : table.ms())
      for (int64_t n : table.ns())
        for (int64_t k : table.ks())
          out += cat(shapeName(m, n, k), " = ",
                     formatQuantity(table.seconds(m, n, k), Quantity::Seconds),
                     "\n");
    out += "\n";
  }

  for (const auto &[key, curve] : profile.collectives) {
    out += cat("[collective ", collectiveName(key.kind),
               " ranks=", key.groupSize, " ranks_per_node=", key.ranksPerNode,
               " concurrent=", key.concurrentGroups, "]\n");
    for (const CollectiveSample &sample : curve.samples())
      out += cat(formatBytes(sample.bytes), " = ",
                 formatQuantity(sample.seconds, Quantity::Seconds), "\n");
    out += "\n";
  }
  // One blank line between sections, none at the end.
  while (out.size() >= 2 && out[out.size() - 1] == '\n' &&
         out[out.size() - 2] == '\n')
    out.pop_back();
  return out;
}

} // namespace cleave::cost
