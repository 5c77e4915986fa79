//===- Quantity.cpp - Numbers with units in text files --------------------===//

#include "cleave/cost_model/Quantity.h"
#include "Strings.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <utility>

namespace cleave::cost {
namespace {

struct Unit {
  std::string_view name;
  double scale;
};

// A unit must match the whole text after the number.
constexpr Unit kSecondUnits[] = {
    {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"ns", 1e-9}};
constexpr Unit kByteUnits[] = {{"B", 1},
                               {"KB", 1e3},
                               {"kB", 1e3},
                               {"MB", 1e6},
                               {"GB", 1e9},
                               {"TB", 1e12},
                               {"KiB", 1024.0},
                               {"MiB", 1048576.0},
                               {"GiB", 1073741824.0},
                               {"TiB", 1099511627776.0}};
constexpr Unit kByteRateUnits[] = {
    {"B/s", 1},          {"KB/s", 1e3},       {"kB/s", 1e3},
    {"MB/s", 1e6},       {"GB/s", 1e9},       {"TB/s", 1e12},
    {"Mb/s", 1e6 / 8},   {"Gb/s", 1e9 / 8},   {"Tb/s", 1e12 / 8},
    {"Mbit/s", 1e6 / 8}, {"Gbit/s", 1e9 / 8}, {"Tbit/s", 1e12 / 8}};
constexpr Unit kFlopRateUnits[] = {
    {"FLOP/s", 1}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15},
    {"FLOPS", 1},  {"GFLOPS", 1e9},  {"TFLOPS", 1e12},  {"PFLOPS", 1e15}};

template <size_t N>
std::optional<double> findScale(const Unit (&units)[N], std::string_view name) {
  for (const Unit &unit : units)
    if (unit.name == name)
      return unit.scale;
  return std::nullopt;
}

// Splits "2.039 TB/s" into its number and its (possibly empty) unit.
std::optional<std::pair<double, std::string_view>>
splitNumber(std::string_view text) {
  text = strip(text);
  double value = 0;
  const char *begin = text.data();
  const char *end = begin + text.size();
  // from_chars rejects a leading '+'; accept it as people write it.
  if (begin != end && *begin == '+')
    ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || !std::isfinite(value))
    return std::nullopt;
  std::string_view unit(ptr, end - ptr);
  return std::make_pair(value, strip(unit));
}

absl::Status expected(std::string_view text, Quantity quantity) {
  return absl::InvalidArgumentError(
      cat("bad value '", text, "': expected ", quantityExample(quantity)));
}

} // namespace

std::string_view quantityExample(Quantity quantity) {
  switch (quantity) {
  case Quantity::Count:
    return "a whole number such as '8'";
  case Quantity::Number:
    return "a number such as '32'";
  case Quantity::Fraction:
    return "a fraction such as '0.85' or '85%'";
  case Quantity::Seconds:
    return "a time such as '2.7 us' (s, ms, us, ns)";
  case Quantity::Bytes:
    return "a size such as '80 GB' (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)";
  case Quantity::ByteRate:
    return "a bandwidth such as '300 GB/s' or '200 Gb/s' (b = bits)";
  case Quantity::FlopRate:
    return "a rate such as '312 TFLOP/s' (FLOP/s, GFLOP/s, TFLOP/s, "
           "PFLOP/s)";
  }
  return "a number";
}

absl::StatusOr<double> parseQuantity(std::string_view text, Quantity quantity) {
  auto parsed = splitNumber(text);
  if (!parsed)
    return expected(text, quantity);
  auto [value, unit] = *parsed;
  std::optional<double> scale;
  switch (quantity) {
  case Quantity::Count:
    if (!unit.empty() || value < 0 || value != std::floor(value) ||
        value > 9.0e15)
      return expected(text, quantity);
    return value;
  case Quantity::Number:
    if (!unit.empty())
      return expected(text, quantity);
    return value;
  case Quantity::Fraction:
    if (unit == "%")
      return value / 100;
    if (!unit.empty())
      return expected(text, quantity);
    return value;
  case Quantity::Seconds:
    scale = unit.empty() ? 1.0 : findScale(kSecondUnits, unit);
    break;
  case Quantity::Bytes:
    scale = unit.empty() ? 1.0 : findScale(kByteUnits, unit);
    break;
  case Quantity::ByteRate:
    scale = unit.empty() ? 1.0 : findScale(kByteRateUnits, unit);
    break;
  case Quantity::FlopRate:
    scale = unit.empty() ? 1.0 : findScale(kFlopRateUnits, unit);
    break;
  }
  if (!scale)
    return expected(text, quantity);
  return value * *scale;
}

std::string formatQuantity(double value, Quantity quantity) {
  // Twelve significant digits read back within 1e-12 and print datasheet
  // figures as people write them (6.6 us, not 6.6000000000000005 us).
  auto number = [](double v) {
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), "%.12g", v);
    return std::string(buffer);
  };
  auto scaled = [&](double v, std::initializer_list<Unit> units) {
    if (v == 0)
      return std::string("0");
    // The largest unit that keeps the number at least 1.
    const Unit *chosen = units.begin();
    for (const Unit &unit : units)
      if (std::fabs(v) >= unit.scale)
        chosen = &unit;
    return number(v / chosen->scale) + " " + std::string(chosen->name);
  };
  switch (quantity) {
  case Quantity::Count:
  case Quantity::Number:
  case Quantity::Fraction:
    return number(value);
  case Quantity::Seconds:
    return scaled(value, {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}});
  case Quantity::Bytes:
    return scaled(value, {{"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}});
  case Quantity::ByteRate:
    return scaled(value,
                  {{"B/s", 1}, {"KB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}});
  case Quantity::FlopRate:
    return scaled(value, {{"FLOP/s", 1}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}});
  }
  return number(value);
}

} // namespace cleave::cost
