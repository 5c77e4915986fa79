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

/// The whole parameter `index` of `plan`, from every rank's block; with
/// `gradientStep` >= 0, its gradient of that step of the run instead (the
/// gradient files hold one block per step; `*gradientSteps` gets how
/// many).
absl::StatusOr<std::vector<float>> assemble(const plan::Plan &plan, int index,
                                            const std::string &dir,
                                            int64_t gradientStep = -1,
                                            int64_t *gradientSteps = nullptr) {
  bool gradient = gradientStep >= 0;
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
    auto block = readFloats(
        gradient ? gradientDumpPath(dir, param.name(), rank.rank())
                 : parameterDumpPath(dir, param.name(), rank.rank()));
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
    if (gradient && count > 0 && int64_t(block->size()) % count == 0) {
      int64_t steps = int64_t(block->size()) / count;
      if (gradientSteps)
        *gradientSteps = steps;
      if (gradientStep >= steps)
        return absl::NotFoundError(absl::StrCat(
            param.name(), ": no gradient of step ", gradientStep + 1));
      block->erase(block->begin(), block->begin() + gradientStep * count);
      block->resize(count);
    }
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

std::string gradientDumpPath(const std::string &dir, const std::string &name,
                             int rank) {
  return absl::StrCat(dir, "/", fileName(name), ".grad.rank", rank, ".bin");
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
  // The reference's parameter index of each of the plan's.
  std::vector<int> refIndex(plan.parameters_size(), -1);
  for (int i = 0; i < plan.parameters_size(); ++i) {
    for (int j = 0; j < reference.parameters_size(); ++j)
      if (reference.parameters(j).name() == plan.parameters(i).name())
        refIndex[i] = j;
    if (refIndex[i] < 0)
      return absl::InternalError(absl::StrCat(
          plan.parameters(i).name(), ": not a parameter of the reference"));
  }

  // AdamW: every step's gradients, before the update.
  bool adam = plan.training().optimizer() == "adamw";
  int64_t refSteps = int64_t(refLosses->size());
  // refGrads[i][t]: parameter i's reference gradient of step t.
  std::vector<std::vector<std::vector<float>>> refGrads(plan.parameters_size());
  double largestGrad = 0;
  // Frozen parameters have no gradient: they keep refGrads[i] empty, no
  // allowance, and are held to the relative error.
  bool haveRefGrads = false;
  for (int i = 0; adam && i < plan.parameters_size(); ++i)
    for (int64_t t = 0; t < refSteps; ++t) {
      auto g = assemble(reference, refIndex[i], referenceDir, t);
      if (!g.ok()) {
        refGrads[i].clear();
        break;
      }
      haveRefGrads = true;
      for (float v : *g)
        largestGrad = std::max(largestGrad, std::fabs(double(v)));
      refGrads[i].push_back(*std::move(g));
    }
  // Under Adam the runs' parameters part by its allowance (below) from the
  // first update on, and later gradients see that: they are held to
  // kAdamGradientFactor x the tolerance, and the allowance is sized by the
  // same gradient difference.
  double gradTolerance = kAdamGradientFactor * tolerance;
  if (haveRefGrads && largestGrad > 0) {
    // The plan's steps are the reference's last ones.
    int64_t planSteps = int64_t(losses->size());
    double worstGrad = 0;
    std::string worstGradName;
    int compared = 0;
    for (int i = 0; i < plan.parameters_size(); ++i) {
      if (refGrads[i].empty())
        continue;
      bool all = true;
      for (int64_t t = 0; t < planSteps && all; ++t) {
        auto mine = assemble(plan, i, planDir, t);
        if (!mine.ok()) {
          all = false; // sharded by ZeRO: no whole gradient to compare
          break;
        }
        const std::vector<float> &ref = refGrads[i][refSteps - planSteps + t];
        if (mine->size() != ref.size())
          return absl::InternalError(absl::StrCat(
              plan.parameters(i).name(), ": ", mine->size(),
              " gradient elements, reference ", ref.size()));
        double diff = 0;
        for (size_t e = 0; e < mine->size(); ++e)
          diff = std::max(diff, std::fabs(double((*mine)[e]) - ref[e]));
        double err = diff / largestGrad;
        if (err > worstGrad) {
          worstGrad = err;
          worstGradName = plan.parameters(i).name();
        }
        if (!(err <= gradTolerance)) {
          *report = out.str();
          return absl::InternalError(absl::StrFormat(
              "the gradient of parameter %s diverges at step %d: it differs "
              "by %.2e of the model's largest gradient > %.0e",
              plan.parameters(i).name(), firstStep + t, err, gradTolerance));
        }
      }
      compared += all;
    }
    if (compared > 0)
      out << absl::StrFormat("gradients: %d compared at every step before "
                             "the update, largest difference %.2e of the "
                             "largest gradient (%s; tolerance %.0e)\n",
                             compared, worstGrad, worstGradName,
                             gradTolerance);
    else
      out << "gradients: not compared (the plan's ZeRO shards them)\n";
  }
  // AdamW's allowance: the gradients agree within gradTolerance x the
  // largest gradient (what the gradient check accepts), and Adam, dividing each
  // gradient by its own magnitude, turns a difference dg in a step's
  // gradient g into an update difference of up to lr dg / |g|, 2 lr at
  // most (a gradient that is rounding noise moves about lr either way):
  // summed over the reference's steps.
  bool adamRule = haveRefGrads && largestGrad > 0;
  double gradSlack = gradTolerance * largestGrad;
  double lr = plan.training().lr();
  int64_t allowanceUsed = 0;
  double worstAllowance = 0;

  double worst = 0;
  std::string worstName;
  for (int i = 0; i < plan.parameters_size(); ++i) {
    const std::string &name = plan.parameters(i).name();
    auto mine = assemble(plan, i, planDir);
    if (!mine.ok())
      return mine.status();
    auto ref = assemble(reference, refIndex[i], referenceDir);
    if (!ref.ok())
      return ref.status();
    if (mine->size() != ref->size())
      return absl::InternalError(absl::StrCat(name, ": ", mine->size(),
                                              " elements, reference ",
                                              ref->size()));
    double err = relativeError(*mine, *ref);
    if (adamRule && !refGrads[i].empty() && !(err <= tolerance)) {
      // What each element moved beyond its allowance, over the tensor's
      // scale (relativeError's).
      const std::vector<std::vector<float>> &g = refGrads[i];
      double scale = 1e-3, excess = 0;
      for (float b : *ref)
        scale = std::max(scale, std::fabs(double(b)));
      for (size_t e = 0; e < mine->size(); ++e) {
        double d = std::fabs(double((*mine)[e]) - double((*ref)[e]));
        double allowance = 0;
        for (const std::vector<float> &step : g) {
          double grad = std::fabs(double(step[e]));
          allowance += lr * (grad > 0 ? std::min(2.0, gradSlack / grad) : 2.0);
        }
        if (d > tolerance * scale) {
          ++allowanceUsed;
          worstAllowance = std::max(worstAllowance, d);
        }
        excess = std::max(excess, d - allowance);
      }
      err = excess / scale;
    }
    if (err > worst) {
      worst = err;
      worstName = name;
    }
    if (!(err <= tolerance)) {
      *report = out.str();
      return absl::InternalError(absl::StrFormat(
          "parameter %s diverges after the last step: relative error %.2e > "
          "%.0e%s",
          name, err, tolerance,
          adamRule ? " beyond AdamW's allowance for its gradients" : ""));
    }
  }
  out << absl::StrFormat("parameters: %d compared, largest relative error "
                         "%.2e (%s)\n",
                         plan.parameters_size(), worst, worstName);
  if (adamRule)
    out << absl::StrFormat(
        "rule: AdamW, an element whose reference gradient of a step is g may "
        "differ by lr min(2, dg / |g|) more for that step than the relative "
        "error allows, dg = %.0e of "
        "the largest gradient (%.2e, the gradients' tolerance): Adam turns "
        "gradient rounding into update differences; %d elements used it, "
        "largest difference %.2e\n",
        gradTolerance, largestGrad, allowanceUsed, worstAllowance);
  else if (adam)
    out << "rule: AdamW without the reference's gradients, every element to "
           "the relative error\n";
  *report = out.str();
  return absl::OkStatus();
}

} // namespace cleave::launcher
