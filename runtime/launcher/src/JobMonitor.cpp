//===- JobMonitor.cpp - Watch a job's ranks and say what went wrong -------===//

#include "cleave/runtime/launcher/JobMonitor.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <regex>

#include <sys/types.h>

namespace cleave::launcher {

namespace {

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string stateName(char state) {
  switch (state) {
  case 'T':
  case 't':
    return "its process is stopped (SIGSTOP or a debugger)";
  case 'D':
    return "its process is blocked in the kernel (uninterruptible I/O)";
  case 'Z':
    return "its process has died";
  default:
    return "its process no longer runs its watchdog";
  }
}

} // namespace

std::map<int, Heartbeat> readHeartbeats(const std::string &dir) {
  std::map<int, Heartbeat> beats;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("rank-", 0) != 0 || name.find('.') != std::string::npos)
      continue;
    std::ifstream in(entry.path());
    std::string line;
    if (!std::getline(in, line))
      continue;
    Heartbeat beat;
    beat.rank = std::atoi(name.c_str() + 5);
    long long pid = 0, ms = 0, since = 0;
    char where[1024] = {0};
    // "pid=P time_ms=T since_ms=S where=TEXT" (TEXT to the end).
    if (std::sscanf(line.c_str(),
                    "pid=%lld time_ms=%lld since_ms=%lld where=%1023[^\n]",
                    &pid, &ms, &since, where) < 3)
      continue;
    beat.pid = static_cast<int>(pid);
    beat.timeMs = ms;
    beat.sinceMs = since;
    beat.where = where;
    beat.done = beat.where == "done";
    beats[beat.rank] = beat;
  }
  return beats;
}

char processState(int pid) {
  if (pid <= 0)
    return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text))
    return 0;
  // "pid (comm) S ...": the state follows the last ')'.
  size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size())
    return 0;
  return text[close + 2];
}

std::map<int, int> rankProcesses(const std::string &marker) {
  std::map<int, int> ranks;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0])))
      continue;
    std::ifstream cmdline(entry.path() / "cmdline", std::ios::binary);
    std::string args((std::istreambuf_iterator<char>(cmdline)),
                     std::istreambuf_iterator<char>());
    if (args.find(marker) == std::string::npos)
      continue;
    std::ifstream environ(entry.path() / "environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(environ)),
                    std::istreambuf_iterator<char>());
    const std::string key = std::string("OMPI_COMM_WORLD_RANK=");
    size_t at = env.find(key);
    if (at == std::string::npos || (at > 0 && env[at - 1] != '\0'))
      continue;
    ranks[std::atoi(env.c_str() + at + key.size())] = std::atoi(name.c_str());
  }
  return ranks;
}

JobMonitor::JobMonitor(std::string heartbeatDir, std::string logPath,
                       double timeoutSeconds, int ranks)
    : heartbeatDir_(std::move(heartbeatDir)), logPath_(std::move(logPath)),
      timeoutSeconds_(timeoutSeconds), ranks_(ranks), log_(logPath_) {}

bool JobMonitor::forUser(const std::string &line) {
  if (log_)
    log_ << line << '\n' << std::flush;
  static const std::regex noticed(
      "^mpirun noticed that process rank ([0-9]+) with PID [0-9]+ on node "
      "(\\S+) exited on signal ([0-9]+) \\(([^)]*)\\).*");
  std::smatch m;
  if (std::regex_match(line, m, noticed)) {
    int rank = std::stoi(m[1]);
    if (!stopped_.count(rank))
      deaths_.push_back("rank " + m[1].str() + " on " + m[2].str() +
                        " died of signal " + m[3].str() + " (" + m[4].str() +
                        ")");
    return false;
  }
  // Open MPI's help messages sit between lines of dashes.
  static const std::regex dashes("^-{20,}\\s*$");
  if (std::regex_match(line, dashes)) {
    inHelpBlock_ = !inHelpBlock_;
    return false;
  }
  // cleave's own lines may interleave with a help block being printed.
  static const std::regex ours(
      "^(rank [0-9]+: |step [0-9]|cleave|check|checkpoint|data: ).*");
  if (std::regex_match(line, ours))
    return true;
  if (inHelpBlock_)
    return false;
  // "[host:pid] message" (ORTE and PMIx log lines).
  static const std::regex logLine("^\\[[^\\]]+:[0-9]+\\] .*");
  if (std::regex_match(line, logLine))
    return false;
  static const std::regex mpirunLine(
      "^(mpirun (has exited|detected|was unable)|Primary job|"
      "An MPI communication peer process has unexpectedly).*");
  return !std::regex_match(line, mpirunLine);
}

bool JobMonitor::check() {
  if (heartbeatDir_.empty())
    return false;
  std::map<int, Heartbeat> beats = readHeartbeats(heartbeatDir_);
  int64_t now = nowMs();
  bool failedToEnd = false;
  for (const auto &[rank, beat] : beats) {
    if (beat.done || stopped_.count(rank))
      continue;
    double silent = (now - beat.timeMs) * 1e-3;
    if (silent < timeoutSeconds_) {
      // Stopped but not yet for the timeout: remembered, should the job
      // end another way before then.
      char state = processState(beat.pid);
      auto seen = seenStopped_.find(rank);
      if (state == 'T' || state == 't') {
        if (seen == seenStopped_.end())
          seenStopped_[rank] = {now, now, beat};
        else
          seen->second.lastMs = now;
      } else if (seen != seenStopped_.end() &&
                 seen->second.lastMs - seen->second.firstMs < 1000) {
        seenStopped_.erase(seen); // a moment's stop, continued
      }
      continue;
    }
    char state = processState(beat.pid);
    // Gone: mpirun reports the death itself.
    if (state == 0 || state == 'Z')
      continue;
    char text[1200];
    std::snprintf(text, sizeof(text),
                  "rank %d stopped responding %s: %s; no heartbeat for "
                  "%.0f s (--timeout %g), so cleave ended it",
                  rank, beat.where.c_str(), stateName(state).c_str(), silent,
                  timeoutSeconds_);
    stopped_[rank] = text;
    if (kill(beat.pid, SIGKILL) != 0)
      failedToEnd = true;
  }
  // A rank stopped before its watchdog began has no heartbeat: found by
  // its process (the job's folder is on its command line), ended when
  // seen stopped for the timeout.
  if (static_cast<int>(beats.size()) < ranks_) {
    for (const auto &[rank, pid] : rankProcesses(heartbeatDir_)) {
      if (beats.count(rank) || stopped_.count(rank))
        continue;
      char state = processState(pid);
      auto seen = seenStopped_.find(rank);
      if (state != 'T' && state != 't') {
        stoppedSince_.erase(rank);
        if (seen != seenStopped_.end() &&
            seen->second.lastMs - seen->second.firstMs < 1000)
          seenStopped_.erase(seen); // a moment's stop, continued
        continue;
      }
      // Remembered as for a rank with a heartbeat: the others may time out
      // waiting for it (at start, agreeing on the trace's time origin)
      // before it has been stopped for the timeout.
      if (seen == seenStopped_.end()) {
        Heartbeat starting;
        starting.rank = rank;
        starting.pid = pid;
        starting.where = "while starting (before its first instruction)";
        seenStopped_[rank] = {now, now, starting};
      } else {
        seen->second.lastMs = now;
      }
      int64_t since = stoppedSince_.emplace(rank, now).first->second;
      if ((now - since) * 1e-3 < timeoutSeconds_)
        continue;
      stopped_[rank] = "rank " + std::to_string(rank) +
                       " stopped responding while starting (before its "
                       "first instruction): " + stateName(state) +
                       "; cleave ended it";
      if (kill(pid, SIGKILL) != 0)
        failedToEnd = true;
    }
  }
  return failedToEnd;
}

std::vector<std::string> JobMonitor::findings() const {
  std::vector<std::string> out;
  for (const auto &[rank, text] : stopped_)
    out.push_back(text);
  for (const auto &[rank, seen] : seenStopped_) {
    if (stopped_.count(rank))
      continue;
    char text[1200];
    std::snprintf(text, sizeof(text),
                  "rank %d stopped responding %s: its process was stopped "
                  "(SIGSTOP or a debugger); the other ranks timed out "
                  "waiting for it",
                  rank, seen.beat.where.c_str());
    out.push_back(text);
  }
  if (out.empty() && !heartbeatDir_.empty()) {
    std::map<int, Heartbeat> beats = readHeartbeats(heartbeatDir_);
    int64_t latest = 0;
    for (const auto &[rank, beat] : beats)
      latest = std::max(latest, beat.timeMs);
    double gap = std::max(1.5, timeoutSeconds_ / 2);
    for (const auto &[rank, beat] : beats) {
      double behind = (latest - beat.timeMs) * 1e-3;
      if (beat.done || behind < gap)
        continue;
      char text[1200];
      std::snprintf(text, sizeof(text),
                    "rank %d stopped responding %s: its last heartbeat came "
                    "%.0f s before the other ranks' last ones",
                    rank, beat.where.c_str(), behind);
      out.push_back(text);
    }
    // A rank alive but stuck outside any instruction (its watchdog has
    // nothing to time out) while the others waited on it.
    if (out.empty())
      for (const auto &[rank, beat] : beats) {
        double stuck = (beat.timeMs - beat.sinceMs) * 1e-3;
        if (beat.done || beat.where != "between instructions" ||
            stuck < 0.8 * timeoutSeconds_)
          continue;
        char text[400];
        std::snprintf(text, sizeof(text),
                      "rank %d made no progress for %.0f s outside any "
                      "instruction (its main thread busy or blocked there) "
                      "while the others waited",
                      rank, stuck);
        out.push_back(text);
      }
    // Ranks of this machine that never wrote one, when others did, and
    // that mpirun did not see die.
    if (!beats.empty())
      for (int rank = 0; rank < ranks_; ++rank) {
        std::string prefix = "rank " + std::to_string(rank) + " ";
        bool died = false;
        for (const std::string &death : deaths_)
          died = died || death.rfind(prefix, 0) == 0;
        if (!beats.count(rank) && !died)
          out.push_back(prefix + "stopped responding while starting: it "
                                 "never reached its first instruction");
      }
  }
  out.insert(out.end(), deaths_.begin(), deaths_.end());
  return out;
}

} // namespace cleave::launcher
