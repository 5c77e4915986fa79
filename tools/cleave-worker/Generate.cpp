//===- Generate.cpp - Autoregressive generation on one rank ---------------===//

#include "Generate.h"
#include "Job.h"

#include "cleave/runtime/comm/MpiCommunicator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>

namespace cleave::worker {

absl::StatusOr<std::vector<std::vector<int64_t>>>
readPrompts(const std::string &path, int64_t vocab) {
  std::ifstream in(path);
  if (!in)
    return absl::NotFoundError("--prompt-file " + path + ": cannot be read");
  std::vector<std::vector<int64_t>> prompts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#')
      continue;
    std::istringstream words(line);
    std::vector<int64_t> ids;
    std::string word;
    while (words >> word) {
      char *end = nullptr;
      long long id = std::strtoll(word.c_str(), &end, 10);
      if (*end != '\0' || id < 0 || (vocab > 0 && id >= vocab))
        return absl::InvalidArgumentError(
            path + ":" + std::to_string(number) + ": '" + word +
            "' is not a token id below the vocabulary's " +
            std::to_string(vocab));
      ids.push_back(id);
    }
    prompts.push_back(std::move(ids));
  }
  if (prompts.empty())
    return absl::InvalidArgumentError("--prompt-file " + path +
                                      ": no prompts (one a line, token ids "
                                      "separated by spaces)");
  return prompts;
}

namespace {

using Clock = std::chrono::steady_clock;

struct Request {
  std::vector<int64_t> prompt, output;
  /// Tokens in the cache (the next token's position).
  int64_t length = 0;
  std::vector<int64_t> blocks;
  /// Seconds from the start: when it arrives (--request-rate), its first
  /// token, its last.
  double arrival = 0, firstToken = 0, end = 0;
  /// The logits each generated token was chosen from (--dump-logits).
  std::vector<float> logits;
};

/// The next token from one sequence's logits: the largest (temperature 0),
/// else drawn from softmax(logits / temperature) restricted to the top-k
/// and then to the smallest set whose probability reaches top-p.
int64_t sample(const float *logits, int64_t vocab, const Options &o,
               std::mt19937_64 &rng) {
  if (o.temperature <= 0)
    return std::max_element(logits, logits + vocab) - logits;
  std::vector<int64_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return logits[a] > logits[b];
  });
  int64_t keep = o.topK > 0 ? std::min<int64_t>(o.topK, vocab) : vocab;
  std::vector<double> p(keep);
  double sum = 0;
  for (int64_t i = 0; i < keep; ++i)
    sum += p[i] = std::exp((logits[order[i]] - logits[order[0]]) /
                           o.temperature);
  if (o.topP < 1) {
    double mass = 0;
    int64_t n = 0;
    while (n < keep && mass < o.topP * sum)
      mass += p[n++];
    keep = std::max<int64_t>(n, 1);
    p.resize(keep);
  }
  std::discrete_distribution<int64_t> pick(p.begin(), p.end());
  return order[pick(rng)];
}

template <typename T> std::string bytesOf(const std::vector<T> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(T));
}

} // namespace

void generate(const Options &options, const plan::Plan &plan,
              executor::Executor &ex) {
  const plan::GenerationConfig &g = plan.generation();
  const int64_t batch = g.max_batch(), blockSize = g.block_size(),
                maxBlocks = (g.max_length() + blockSize - 1) / blockSize;
  if (g.tokens_per_step() != 1)
    fail("generate: the plan takes " + std::to_string(g.tokens_per_step()) +
         " tokens a step; this runtime feeds one");
  absl::StatusOr<std::vector<std::vector<int64_t>>> prompts =
      readPrompts(options.generatePath, g.vocab());
  if (!prompts.ok())
    fail(std::string(prompts.status().message()));
  int64_t newTokens =
      options.maxNewTokens > 0 ? options.maxNewTokens : g.output_len();
  std::vector<Request> requests;
  for (size_t i = 0; i < prompts->size(); ++i) {
    Request r;
    r.prompt = (*prompts)[i];
    if (r.prompt.empty())
      fail("generate: request " + std::to_string(i) + " has an empty prompt");
    if (int64_t(r.prompt.size()) + newTokens > g.max_length())
      fail("generate: request " + std::to_string(i) + " needs " +
           std::to_string(r.prompt.size() + newTokens) +
           " positions (prompt and --max-new-tokens), more than the plan's "
           "caches hold for a sequence (" +
           std::to_string(g.max_length()) + "; compile with a larger "
           "--prompt-len or --output-len)");
    requests.push_back(std::move(r));
  }
  // The lowest rank holding the logits samples for everyone.
  int sampler = -1;
  for (int r = 0; r < plan.ranks_size() && sampler < 0; ++r)
    if (plan.programs(plan.ranks(r).program()).output_tensors_size() > 0)
      sampler = r;
  if (sampler < 0)
    fail("generate: no program of the plan returns the logits");
  std::mt19937_64 rng(options.seed.value_or(1234));

  // Arrivals: all at the start, or a Poisson process of --request-rate
  // (its own seeded generator, so the sampling draws stay the same).
  if (options.requestRate > 0) {
    std::mt19937_64 arrivals(options.seed.value_or(1234) + 1);
    std::exponential_distribution<double> gap(options.requestRate);
    double t = 0;
    for (Request &r : requests)
      r.arrival = t += gap(arrivals);
  }
  std::deque<int64_t> waiting;
  size_t arrived = 0;
  std::vector<int64_t> active(batch, -1);
  std::vector<int64_t> freeBlocks(g.blocks());
  std::iota(freeBlocks.rbegin(), freeBlocks.rend(), 0); // pop from the back
  auto start = Clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  int64_t step = 0, generated = 0;
  size_t done = 0;
  while (done < requests.size()) {
    // The requests that have arrived, by the sampling rank's clock (every
    // rank must admit alike); with nothing to run, it waits for the next.
    int64_t came = int64_t(arrived);
    if (rank() == sampler) {
      bool idle = waiting.empty() &&
                  std::all_of(active.begin(), active.end(),
                              [](int64_t a) { return a < 0; });
      if (idle && size_t(came) < requests.size() &&
          requests[came].arrival > seconds())
        std::this_thread::sleep_for(std::chrono::duration<double>(
            requests[came].arrival - seconds()));
      while (size_t(came) < requests.size() &&
             requests[came].arrival <= seconds())
        ++came;
    }
    comm::mpiBroadcast(&came, sizeof(came), sampler);
    for (; arrived < size_t(came); ++arrived)
      waiting.push_back(int64_t(arrived));
    // Admit waiting requests into free batch entries.
    for (int64_t b = 0; b < batch && !waiting.empty(); ++b)
      if (active[b] < 0) {
        active[b] = waiting.front();
        waiting.pop_front();
      }
    std::vector<int64_t> tokens(batch, 0), positions(batch, 0),
        slots(batch, -1), table(batch * maxBlocks, 0), lengths(batch, 0);
    for (int64_t b = 0; b < batch; ++b) {
      if (active[b] < 0)
        continue;
      Request &r = requests[active[b]];
      int64_t p = r.length;
      if (p % blockSize == 0) {
        if (freeBlocks.empty())
          fail("generate: the cache's " + std::to_string(g.blocks()) +
               " blocks are all held");
        r.blocks.push_back(freeBlocks.back());
        freeBlocks.pop_back();
      }
      tokens[b] = p < int64_t(r.prompt.size()) ? r.prompt[p] : r.output.back();
      positions[b] = p;
      slots[b] = r.blocks[p / blockSize] * blockSize + p % blockSize;
      lengths[b] = p + 1;
      std::copy(r.blocks.begin(), r.blocks.end(),
                table.begin() + b * maxBlocks);
    }
    ex.setInput("tokens", bytesOf(tokens));
    ex.setInput("positions", bytesOf(positions));
    ex.setInput("slots", bytesOf(slots));
    ex.setInput("block_table", bytesOf(table));
    ex.setInput("lengths", bytesOf(lengths));
    absl::StatusOr<executor::StepResult> result = ex.runStep(++step);
    if (!result.ok())
      fail(std::string(result.status().message()));
    std::vector<int64_t> next(batch, -1);
    if (rank() == sampler) {
      std::vector<float> logits =
          ex.tensorValues(ex.program().output_tensors(0), 0);
      if (int64_t(logits.size()) != batch * g.vocab())
        fail("generate: the logits hold " + std::to_string(logits.size()) +
             " values, not " + std::to_string(batch) + " x " +
             std::to_string(g.vocab()));
      for (int64_t b = 0; b < batch; ++b)
        if (active[b] >= 0 && requests[active[b]].length + 1 >=
                                  int64_t(requests[active[b]].prompt.size())) {
          const float *row = logits.data() + b * g.vocab();
          next[b] = sample(row, g.vocab(), options, rng);
          if (!options.logitsPath.empty())
            requests[active[b]].logits.insert(
                requests[active[b]].logits.end(), row, row + g.vocab());
        }
    }
    comm::mpiBroadcast(next.data(), batch * sizeof(int64_t), sampler);
    double now = seconds();
    for (int64_t b = 0; b < batch; ++b) {
      if (active[b] < 0)
        continue;
      Request &r = requests[active[b]];
      ++r.length;
      if (next[b] < 0)
        continue; // still reading its prompt
      r.output.push_back(next[b]);
      ++generated;
      if (r.output.size() == 1)
        r.firstToken = now;
      if (int64_t(r.output.size()) < newTokens)
        continue;
      r.end = now;
      freeBlocks.insert(freeBlocks.end(), r.blocks.rbegin(), r.blocks.rend());
      r.blocks.clear();
      active[b] = -1;
      ++done;
    }
  }
  if (rank() != sampler)
    return;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request &r = requests[i];
    std::string ids;
    for (int64_t id : r.output)
      ids += " " + std::to_string(id);
    double tpot = r.output.size() > 1
                      ? (r.end - r.firstToken) / double(r.output.size() - 1)
                      : 0;
    double ttft = r.firstToken - r.arrival;
    std::printf("request %zu: %zu prompt + %zu generated tokens:%s  TTFT %.1f "
                "ms  TPOT %.1f ms\n",
                i, r.prompt.size(), r.output.size(), ids.c_str(),
                ttft * 1e3, tpot * 1e3);
  }
  if (!options.logitsPath.empty()) {
    std::ofstream file(options.logitsPath, std::ios::binary | std::ios::trunc);
    for (const Request &r : requests)
      file.write(reinterpret_cast<const char *>(r.logits.data()),
                 static_cast<std::streamsize>(r.logits.size() * sizeof(float)));
    // The tokens beside them, a request a line.
    std::ofstream tokens(options.logitsPath + ".tokens", std::ios::trunc);
    for (size_t i = 0; i < requests.size(); ++i) {
      tokens << "request " << i << ":";
      for (int64_t id : requests[i].output)
        tokens << " " << id;
      tokens << "\n";
    }
    if (!file || !tokens)
      fail("--dump-logits " + options.logitsPath + ": cannot be written");
  }
  double total = seconds();
  std::printf("generated %lld tokens for %zu requests in %.3f s (%.0f "
              "tokens/s, %lld steps of %lld sequences)\n",
              static_cast<long long>(generated), requests.size(), total,
              generated / total, static_cast<long long>(step),
              static_cast<long long>(batch));
  std::fflush(stdout);
}

} // namespace cleave::worker
