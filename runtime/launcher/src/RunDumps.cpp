//===- RunDumps.cpp - What a run's ranks dump, and comparing two runs -----===//

#include "cleave/runtime/launcher/RunDumps.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cleave::launcher {

namespace {

std::string fileName(std::string name) {
  for (char &c : name)
    if (c == '/' || c == '\\' || c == ' ')
      c = '_';
  return name;
}

absl::StatusOr<std::vector<double>> readLosses(const std::string &dir) {
  std::ifstream in(lossDumpPath(dir));
  if (!in)
    return absl::NotFoundError(lossDumpPath(dir) + ": missing");
  std::vector<double> out;
  double v;
  while (in >> v)
    out.push_back(v);
  return out;
}

int64_t axisIndex(const plan::Plan &p, const std::string &name) {
  for (int a = 0; a < p.mesh().axes_size(); ++a)
    if (p.mesh().axes(a).name() == name)
      return a;
  return -1;
}

/// The whole parameter `index` of `plan`, from every rank's block.
absl::StatusOr<std::vector<float>> assemble(const plan::Plan &plan, int index,
                                            const std::string &dir) {
  const plan::ParameterSharding &param = plan.parameters(index);
  std::vector<int64_t> global(param.global_shape().begin(),
                              param.global_shape().end());
  int64_t total = 1;
  for (int64_t d : global)
    total *= d;
  std::vector<float> whole(total, 0.0f);
  std::vector<bool> seen(total, false);
  for (const plan::RankAssignment &rank : plan.ranks()) {
    const plan::Program &program = plan.programs(rank.program());
    bool holds = false;
    for (const plan::TensorDecl &t : program.tensors())
      holds |= t.kind() == plan::TensorDecl::PARAMETER &&
               t.param_index() == index;
    if (!holds)
      continue;
    auto block = readFloats(parameterDumpPath(dir, param.name(), rank.rank()));
    if (!block.ok())
      return block.status();
    // Block extent and origin per dimension.
    size_t rankDims = global.size();
    std::vector<int64_t> local(rankDims), origin(rankDims, 0);
    for (size_t d = 0; d < rankDims; ++d) {
      int64_t parts = 1, coord = 0;
      if (d < size_t(param.dims_size()))
        for (const std::string &axis : param.dims(d).axes()) {
          int64_t a = axisIndex(plan, axis);
          int64_t size = a < 0 ? 1 : plan.mesh().axes(a).size();
          coord = coord * size + (a < 0 ? 0 : rank.coords(a));
          parts *= size;
        }
      local[d] = global[d] / parts;
      origin[d] = coord * local[d];
    }
    int64_t count = 1;
    for (int64_t d : local)
      count *= d;
    if (int64_t(block->size()) != count)
      return absl::DataLossError(absl::StrCat(
          param.name(), " of rank ", rank.rank(), " has ", block->size(),
          " values, expected ", count));
    std::vector<int64_t> idx(rankDims, 0);
    for (int64_t i = 0; i < count; ++i) {
      int64_t g = 0;
      for (size_t d = 0; d < rankDims; ++d)
        g = g * global[d] + origin[d] + idx[d];
      float v = (*block)[i];
      // Replicas must agree exactly: they ran the same updates.
      if (seen[g] && whole[g] != v)
        return absl::InternalError(absl::StrCat(
            param.name(), ": the replica on rank ", rank.rank(),
            " differs from another rank's at element ", g, " (", v, " vs ",
            whole[g], ")"));
      whole[g] = v;
      seen[g] = true;
      for (int64_t d = int64_t(rankDims) - 1; d >= 0; --d) {
        if (++idx[d] < local[d])
          break;
        idx[d] = 0;
      }
    }
  }
  for (int64_t i = 0; i < total; ++i)
    if (!seen[i])
      return absl::DataLossError(absl::StrCat(
          param.name(), ": element ", i, " is held by no rank"));
  return whole;
}

/// max |a - b| / max(max |b|, 1e-3): an error relative to the tensor's
/// scale, so that elements near zero do not dominate. The floor keeps a
/// tensor whose gradient is zero in exact arithmetic (an attention key
/// bias: softmax ignores it) from turning rounding noise of 1e-9 into a
/// relative error of 1: such a tensor is held to an absolute 1e-3 x
/// tolerance.
double relativeError(const std::vector<float> &a, const std::vector<float> &b) {
  double diff = 0, scale = 1e-3;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

} // namespace

absl::StatusOr<std::vector<float>> readFloats(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(path, ": missing (the run did "
                                                  "not dump it)"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string s = bytes.str();
  std::vector<float> out(s.size() / sizeof(float));
  std::memcpy(out.data(), s.data(), out.size() * sizeof(float));
  return out;
}

std::string parameterDumpPath(const std::string &dir, const std::string &name,
                              int rank) {
  return absl::StrCat(dir, "/", fileName(name), ".rank", rank, ".bin");
}

std::string lossDumpPath(const std::string &dir) { return dir + "/loss.txt"; }

std::string outputDumpPath(const std::string &dir, int output,
                           int64_t microbatch, int rank) {
  return absl::StrCat(dir, "/output", output, ".mb", microbatch, ".rank", rank,
                      ".bin");
}

absl::StatusOr<std::vector<float>> assembleOutput(const plan::Plan &plan,
                                                  int index,
                                                  const std::string &dir) {
  int64_t B = plan.training().global_batch();
  int64_t M = std::max<int64_t>(1, plan.knobs().num_microbatches());
  // Replicas hold different samples: the "dp" axis, and "ep" inside it.
  int64_t dpAxis = axisIndex(plan, "dp"), epAxis = axisIndex(plan, "ep");
  int64_t ep = epAxis < 0 ? 1 : plan.mesh().axes(epAxis).size();
  int64_t dp = (dpAxis < 0 ? 1 : plan.mesh().axes(dpAxis).size()) * ep;
  int64_t rows = B / (M * dp);
  std::vector<float> whole;
  std::vector<bool> seen;
  int64_t rowSize = -1;
  for (const plan::RankAssignment &rank : plan.ranks()) {
    const plan::Program &program = plan.programs(rank.program());
    if (index >= program.output_tensors_size())
      continue;
    int64_t d = (dpAxis < 0 ? 0 : rank.coords(dpAxis)) * ep +
                (epAxis < 0 ? 0 : rank.coords(epAxis));
    for (int64_t m = 0; m < M; ++m) {
      auto block = readFloats(outputDumpPath(dir, index, m, rank.rank()));
      if (!block.ok())
        return block.status();
      if (rowSize < 0) {
        rowSize = int64_t(block->size()) / rows;
        whole.assign(B * rowSize, 0.0f);
        seen.assign(whole.size(), false);
      }
      if (int64_t(block->size()) != rows * rowSize)
        return absl::DataLossError(absl::StrCat(
            "output ", index, " of rank ", rank.rank(), " has ",
            block->size(), " values, expected ", rows * rowSize));
      int64_t start = (m * (B / M) + d * rows) * rowSize;
      for (size_t i = 0; i < block->size(); ++i) {
        float v = (*block)[i];
        if (seen[start + i] && whole[start + i] != v)
          return absl::InternalError(absl::StrCat(
              "output ", index, ": rank ", rank.rank(),
              " disagrees with a replica at element ", start + i));
        whole[start + i] = v;
        seen[start + i] = true;
      }
    }
  }
  if (whole.empty())
    return absl::NotFoundError(
        absl::StrCat("the plan has no output ", index));
  return whole;
}

absl::Status compareRuns(const plan::Plan &plan, const std::string &planDir,
                         const plan::Plan &reference,
                         const std::string &referenceDir, double tolerance,
                         std::string *report, int64_t firstStep) {
  auto losses = readLosses(planDir);
  auto refLosses = readLosses(referenceDir);
  if (!losses.ok())
    return losses.status();
  if (!refLosses.ok())
    return refLosses.status();
  if (losses->size() > refLosses->size())
    return absl::InternalError(absl::StrCat("the plan ran ", losses->size(),
                                            " steps, the reference ",
                                            refLosses->size()));
  // A resumed run's steps are the reference's last ones.
  size_t skip = refLosses->size() - losses->size();
  std::ostringstream out;
  for (size_t s = 0; s < losses->size(); ++s) {
    double a = (*losses)[s], b = (*refLosses)[skip + s];
    double err = std::fabs(a - b) / std::max(std::fabs(b), 1e-30);
    int64_t step = firstStep + static_cast<int64_t>(s);
    out << absl::StrFormat("step %d  loss %.7f  reference %.7f  rel. error "
                           "%.2e\n",
                           step, a, b, err);
    if (!(err <= tolerance)) {
      *report = out.str();
      return absl::InternalError(absl::StrFormat(
          "the loss of step %d diverges: %.9g against the reference's %.9g "
          "(relative error %.2e > %.0e)",
          step, a, b, err, tolerance));
    }
  }
  double worst = 0;
  std::string worstName;
  for (int i = 0; i < plan.parameters_size(); ++i) {
    const std::string &name = plan.parameters(i).name();
    int refIndex = -1;
    for (int j = 0; j < reference.parameters_size(); ++j)
      if (reference.parameters(j).name() == name)
        refIndex = j;
    if (refIndex < 0)
      return absl::InternalError(
          absl::StrCat(name, ": not a parameter of the reference"));
    auto mine = assemble(plan, i, planDir);
    if (!mine.ok())
      return mine.status();
    auto ref = assemble(reference, refIndex, referenceDir);
    if (!ref.ok())
      return ref.status();
    if (mine->size() != ref->size())
      return absl::InternalError(absl::StrCat(name, ": ", mine->size(),
                                              " elements, reference ",
                                              ref->size()));
    double err = relativeError(*mine, *ref);
    if (err > worst) {
      worst = err;
      worstName = name;
    }
    if (!(err <= tolerance)) {
      *report = out.str();
      return absl::InternalError(absl::StrFormat(
          "parameter %s diverges after the last step: relative error %.2e > "
          "%.0e",
          name, err, tolerance));
    }
  }
  out << absl::StrFormat("parameters: %d compared, largest relative error "
                         "%.2e (%s)\n",
                         plan.parameters_size(), worst, worstName);
  *report = out.str();
  return absl::OkStatus();
}

} // namespace cleave::launcher
