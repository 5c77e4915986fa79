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
  // Sequences at once: each takes a row of every step; rows beyond them
  // only ever read prompts (--step-tokens).
  const int64_t sequences =
      g.max_sequences() > 0 ? std::min(g.max_sequences(), batch) : batch;
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
  // A request needs a block per 16 positions of its whole length: fewer
  // in the cache than one request needs could never finish it.
  for (size_t i = 0; i < requests.size(); ++i) {
    int64_t need = (int64_t(requests[i].prompt.size()) + newTokens +
                    blockSize - 1) / blockSize;
    if (need > g.blocks())
      fail("generate: request " + std::to_string(i) + " needs " +
           std::to_string(need) + " cache blocks of " +
           std::to_string(blockSize) + " tokens; the plan's cache has " +
           std::to_string(g.blocks()) + " (compile with more --cache-blocks)");
  }
  // The program's rows are a step's token budget: each running sequence
  // takes one (its next token), and rows left over read prompts, several
  // positions of one sequence at once (chunked prefill, as Sarathi-Serve
  // and vLLM schedule): every row writes its key and value at its slot
  // before any row of the layer attends, so a row sees the rows of its
  // sequence before it in the same step. A sequence preempted when the
  // cache's blocks run out (the one admitted last) gives its blocks back
  // and later reads its prompt and the tokens it had generated again.
  std::deque<int64_t> waiting;
  size_t arrived = 0;
  std::vector<int64_t> running; // in order of admission
  std::vector<int64_t> freeBlocks(g.blocks());
  std::iota(freeBlocks.rbegin(), freeBlocks.rend(), 0); // pop from the back
  auto known = [&](const Request &r) {
    return int64_t(r.prompt.size() + r.output.size());
  };
  auto tokenAt = [&](const Request &r, int64_t p) {
    return p < int64_t(r.prompt.size()) ? r.prompt[p]
                                        : r.output[p - r.prompt.size()];
  };
  auto blocksFor = [&](int64_t positions) {
    return (positions + blockSize - 1) / blockSize;
  };
  auto release = [&](Request &r) {
    freeBlocks.insert(freeBlocks.end(), r.blocks.rbegin(), r.blocks.rend());
    r.blocks.clear();
  };
  auto start = Clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  int64_t step = 0, generated = 0, preemptions = 0, rowsUsed = 0;
  size_t done = 0;
  // A progress line every few seconds of a long run (none in a short one).
  constexpr double kProgressEvery = 5.0;
  double lastProgress = 0;
  while (done < requests.size()) {
    // The requests that have arrived, by the sampling rank's clock (every
    // rank must admit alike); with nothing to run, it waits for the next.
    int64_t came = int64_t(arrived);
    if (rank() == sampler) {
      bool idle = waiting.empty() && running.empty();
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
    // Admit in arrival order while a row is free and the blocks of what
    // the request has to read, beside the next token of every running
    // sequence.
    int64_t reserved = 0;
    for (int64_t id : running)
      reserved += blocksFor(requests[id].length + 1) -
                  int64_t(requests[id].blocks.size());
    while (int64_t(running.size()) < sequences && !waiting.empty()) {
      int64_t need = blocksFor(known(requests[waiting.front()]) + 1);
      if (reserved + need > int64_t(freeBlocks.size()))
        break;
      reserved += need;
      running.push_back(waiting.front());
      waiting.pop_front();
    }
    // Rows: one for each running sequence, then the rest to the ones
    // still reading, in order of admission; preempt the latest while the
    // blocks those rows need are not free.
    std::vector<int64_t> rows;
    for (;;) {
      rows.assign(running.size(), 1);
      int64_t left = batch - int64_t(running.size());
      int64_t need = 0;
      for (size_t i = 0; i < running.size(); ++i) {
        const Request &r = requests[running[i]];
        int64_t more = std::min(left, known(r) - r.length - 1);
        rows[i] += more;
        left -= more;
        need += blocksFor(r.length + rows[i]) - int64_t(r.blocks.size());
      }
      if (need <= int64_t(freeBlocks.size()))
        break;
      Request &last = requests[running.back()];
      preemptions += !last.blocks.empty();
      release(last);
      last.length = 0;
      waiting.push_front(running.back());
      running.pop_back();
    }
    std::vector<int64_t> tokens(batch, 0), positions(batch, 0),
        slots(batch, -1), table(batch * maxBlocks, 0), lengths(batch, 0);
    // Which request each row reads for, and the position it samples at.
    std::vector<int64_t> rowRequest(batch, -1), samples(batch, 0);
    int64_t row = 0;
    for (size_t i = 0; i < running.size(); ++i) {
      Request &r = requests[running[i]];
      while (int64_t(r.blocks.size()) < blocksFor(r.length + rows[i])) {
        r.blocks.push_back(freeBlocks.back());
        freeBlocks.pop_back();
      }
      for (int64_t k = 0; k < rows[i]; ++k, ++row) {
        int64_t p = r.length + k;
        tokens[row] = tokenAt(r, p);
        positions[row] = p;
        slots[row] = r.blocks[p / blockSize] * blockSize + p % blockSize;
        lengths[row] = p + 1;
        std::copy(r.blocks.begin(), r.blocks.end(),
                  table.begin() + row * maxBlocks);
        rowRequest[row] = running[i];
        // The row of the last known token gives the next one.
        samples[row] = p + 1 == known(r);
      }
    }
    rowsUsed += row;
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
      for (int64_t b = 0; b < row; ++b)
        if (samples[b]) {
          const float *values = logits.data() + b * g.vocab();
          next[b] = sample(values, g.vocab(), options, rng);
          if (!options.logitsPath.empty())
            requests[rowRequest[b]].logits.insert(
                requests[rowRequest[b]].logits.end(), values,
                values + g.vocab());
        }
    }
    comm::mpiBroadcast(next.data(), batch * sizeof(int64_t), sampler);
    double now = seconds();
    for (size_t i = 0; i < running.size(); ++i)
      requests[running[i]].length += rows[i];
    for (int64_t b = 0; b < row; ++b) {
      if (next[b] < 0)
        continue; // a row still reading
      Request &r = requests[rowRequest[b]];
      r.output.push_back(next[b]);
      ++generated;
      if (r.output.size() == 1)
        r.firstToken = now;
      if (int64_t(r.output.size()) < newTokens)
        continue;
      r.end = now;
      release(r);
      running.erase(std::find(running.begin(), running.end(), rowRequest[b]));
      ++done;
    }
    if (rank() == sampler && now - lastProgress >= kProgressEvery &&
        done < requests.size()) {
      lastProgress = now;
      std::printf("progress: %.0f s, step %lld, %zu of %zu requests done, "
                  "%zu running, %zu waiting, %lld tokens generated (%.0f "
                  "tokens/s), %lld preemptions\n",
                  now, static_cast<long long>(step), done, requests.size(),
                  running.size(), waiting.size(),
                  static_cast<long long>(generated), generated / now,
                  static_cast<long long>(preemptions));
      std::fflush(stdout);
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
              "tokens/s, %lld steps of %lld rows, %.1f used a step, %lld "
              "preemptions)\n",
              static_cast<long long>(generated), requests.size(), total,
              generated / total, static_cast<long long>(step),
              static_cast<long long>(batch), double(rowsUsed) / step,
              static_cast<long long>(preemptions));
  std::fflush(stdout);
}

} // namespace cleave::worker
