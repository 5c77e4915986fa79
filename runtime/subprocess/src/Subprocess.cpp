//===- Subprocess.cpp - Run a program with a timeout ----------------------===//

#include "cleave/runtime/subprocess/Subprocess.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace cleave::subprocess {
namespace {

constexpr size_t kKeptLines = 20;
// How long a process group has to end after SIGTERM before SIGKILL.
constexpr double kTermGraceSeconds = 5;

class LineSplitter {
public:
  LineSplitter(const std::function<void(const std::string &)> &onLine,
               std::deque<std::string> &kept)
      : onLine_(onLine), kept_(kept) {}

  void add(const char *data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      if (data[i] == '\n')
        flush();
      else
        partial_ += data[i];
    }
  }

  void flush() {
    if (!partial_.empty() && partial_.back() == '\r')
      partial_.pop_back();
    if (onLine_)
      onLine_(partial_);
    kept_.push_back(std::move(partial_));
    if (kept_.size() > kKeptLines)
      kept_.pop_front();
    partial_.clear();
  }

  bool hasPartial() const { return !partial_.empty(); }

private:
  const std::function<void(const std::string &)> &onLine_;
  std::deque<std::string> &kept_;
  std::string partial_;
};

/// `name` as a path execve can take: itself where it names a path (has a
/// '/'), else the first executable of that name on PATH (posix_spawnp's
/// search, done before the fork), else `name` (execve then reports it).
std::string resolveProgram(const std::string &name) {
  if (name.find('/') != std::string::npos)
    return name;
  const char *path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos)
      end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0 &&
        !std::filesystem::is_directory(candidate))
      return candidate;
    start = end + 1;
  }
  return name;
}

int decodeWaitStatus(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return -1;
}

} // namespace

absl::StatusOr<ProcessOutcome>
runProcess(const std::vector<std::string> &argv,
           const std::vector<std::string> &extraEnvironment,
           double timeoutSeconds,
           const std::function<void(const std::string &)> &onLine,
           const std::function<bool()> &shouldStop) {
  if (argv.empty())
    return absl::InvalidArgumentError("no program to run");

  // Everything the child needs is built before it starts: the profiler has
  // OpenBLAS threads, and a child of a threaded process may not allocate.
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<char *> env;
  for (const std::string &entry : extraEnvironment)
    env.push_back(const_cast<char *>(entry.c_str()));
  for (char **entry = environ; *entry; ++entry) {
    // An inherited variable of the same name would be shadowed anyway;
    // dropping it keeps the environment unambiguous.
    std::string_view inherited(*entry);
    bool overridden = false;
    for (const std::string &extra : extraEnvironment) {
      size_t equals = extra.find('=');
      if (inherited.substr(0, equals + 1) == extra.substr(0, equals + 1))
        overridden = true;
    }
    if (!overridden)
      env.push_back(*entry);
  }
  env.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return absl::InternalError(std::string("cannot create a pipe: ") +
                               std::strerror(errno));

  std::string program = resolveProgram(argv[0]);
  // The child reports a failed exec through this pipe (closed on success).
  int execFds[2];
  if (pipe2(execFds, O_CLOEXEC) != 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError(std::string("cannot create a pipe: ") +
                               std::strerror(errno));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec. The child leads its own
    // process group (so that a timeout ends mpirun and every rank it
    // started) and receives SIGTERM when this process dies, however it
    // dies: mpirun then ends its ranks, and nothing outlives `cleave run`
    // (a killed launcher used to leave mpirun and the workers running).
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
      _exit(127); // the parent died before the signal was armed
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    execve(program.c_str(), args.data(), env.data());
    int error = errno;
    ssize_t ignored = write(execFds[1], &error, sizeof(error));
    (void)ignored;
    _exit(127);
  }
  close(fds[1]);
  close(execFds[1]);
  if (pid < 0) {
    int error = errno;
    close(fds[0]);
    close(execFds[0]);
    return absl::InternalError("cannot start '" + argv[0] +
                               "': " + std::strerror(error));
  }
  int execError = 0;
  ssize_t got;
  do
    got = read(execFds[0], &execError, sizeof(execError));
  while (got < 0 && errno == EINTR);
  close(execFds[0]);
  if (got == sizeof(execError)) {
    waitpid(pid, nullptr, 0);
    close(fds[0]);
    return absl::NotFoundError("cannot run '" + argv[0] +
                               "': " + std::strerror(execError));
  }

  std::deque<std::string> kept;
  LineSplitter lines(onLine, kept);
  ProcessOutcome outcome;
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };

  // Read until every process holding the pipe has closed it, or time out.
  bool open = true;
  while (open) {
    double left = timeoutSeconds - elapsed();
    if (left <= 0) {
      outcome.timedOut = true;
      break;
    }
    if (shouldStop && shouldStop()) {
      outcome.stopped = true;
      break;
    }
    pollfd readable{fds[0], POLLIN, 0};
    int ready = poll(&readable, 1,
                     static_cast<int>(std::min(left, 0.5) * 1000) + 1);
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      continue; // the timeout is checked at the top
    char buffer[4096];
    ssize_t n = read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      open = false;
    else
      lines.add(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (lines.hasPartial())
    lines.flush();

  // The pipe can close before the process exits; wait for it, within the
  // same deadline, then end the whole group.
  int status = 0;
  pid_t done = 0;
  while (!outcome.timedOut && !outcome.stopped) {
    done = waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR))
      break;
    if (elapsed() >= timeoutSeconds)
      outcome.timedOut = true;
    else
      usleep(10000);
  }
  if (outcome.timedOut || outcome.stopped) {
    kill(-pid, SIGTERM);
    double termAt = elapsed();
    while ((done = waitpid(pid, &status, WNOHANG)) == 0 &&
           elapsed() - termAt < kTermGraceSeconds)
      usleep(10000);
    // mpirun forwards SIGTERM to its ranks; anything left is killed.
    kill(-pid, SIGKILL);
    if (done == 0)
      done = waitpid(pid, &status, 0);
  }
  outcome.exitStatus = done == pid ? decodeWaitStatus(status) : -1;
  outcome.lastLines.assign(kept.begin(), kept.end());
  return outcome;
}

MpiSessionDirectory::MpiSessionDirectory() {
  const char *base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base && *base ? base : "/tmp") + "/cleave-mpi-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()))
    path = buffer.data();
}

MpiSessionDirectory::~MpiSessionDirectory() {
  if (path.empty())
    return;
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

std::vector<std::string> MpiSessionDirectory::environment() const {
  if (path.empty())
    return {};
  return {"OMPI_MCA_orte_tmpdir_base=" + path};
}

} // namespace cleave::subprocess
