// ports_bench: lease+release cycles per second of the port broker under
// contention, against a baseline measured in the same run: the bare
// durable transaction the broker is built on (flock, read the table, write a
// temp file, fsync, rename) with no port logic and no bind probes.
//
// Usage: ports_bench [SECONDS_PER_CASE] [LEASE_DIR_PARENT]
// Prints one Markdown table row per case.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/node/ports.h"

namespace {

using Clock = std::chrono::steady_clock;

// Runs `procs` processes doing `cycle` until the deadline; returns the
// total number of cycles per second.
template <class Cycle>
double RunProcs(int procs, double seconds, Cycle cycle) {
  std::vector<int> pipes;
  std::vector<pid_t> kids;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  for (int i = 0; i < procs; ++i) {
    int p[2];
    if (::pipe(p) != 0) std::exit(1);
    const pid_t pid = ::fork();
    if (pid == 0) {
      long n = 0;
      while (Clock::now() < deadline) {
        if (!cycle(i)) ::_exit(2);
        ++n;
      }
      (void)!::write(p[1], &n, sizeof n);
      ::_exit(0);
    }
    ::close(p[1]);
    pipes.push_back(p[0]);
    kids.push_back(pid);
  }
  long total = 0;
  for (size_t i = 0; i < kids.size(); ++i) {
    long n = 0;
    if (::read(pipes[i], &n, sizeof n) != sizeof n) {
      std::fprintf(stderr, "worker %zu failed\n", i);
      std::exit(1);
    }
    total += n;
    ::close(pipes[i]);
    ::waitpid(kids[i], nullptr, 0);
  }
  return static_cast<double>(total) / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  const std::string parent = argc > 2 ? argv[2] : "/tmp";
  char tmpl[4096];
  std::snprintf(tmpl, sizeof tmpl, "%s/ix-ports-bench.XXXXXX", parent.c_str());
  if (!::mkdtemp(tmpl)) return 1;
  const std::string dir = tmpl;

  // Baseline: the durable locked read-modify-write, nothing else.
  auto baseline_cycle = [&](int) {
    const int lock = ::open((dir + "/base.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock < 0 || ::flock(lock, LOCK_EX) != 0) return false;
    std::string table;
    {
      std::ifstream in(dir + "/base");
      std::getline(in, table, '\0');
    }
    const std::string tmp = dir + "/base.tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const std::string line = "20000 1 PORT job.0 1 1 boot 0\n";
    bool ok = fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
              ::fsync(fd) == 0;
    if (fd >= 0) ::close(fd);
    ok = ok && ::rename(tmp.c_str(), (dir + "/base").c_str()) == 0;
    ::close(lock);
    return ok;
  };

  ix::PortBrokerConfig config;
  config.lease_dir = dir + "/leases";
  auto broker_cycle = [&](int i) {
    static ix::BindProber prober;
    static ix::ProcessLiveness live;
    static auto broker = ix::PortBroker::Open(config, prober, live);
    if (!broker) return false;
    const std::string id = "bench" + std::to_string(i) + ".0";
    auto got = broker.value().Lease(ix::MakeOwner(id, ::getpid()),
                                    {{"PORT", 1}, {"ENGINE_PORT", 1}, {"ROUTER_METRICS_PORT", 1}});
    if (!got) {
      std::fprintf(stderr, "%s\n", got.error().message.c_str());
      return false;
    }
    // A transaction pays twice per cycle: once to lease, once to release.
    return broker.value().Release(id).ok();
  };

  std::printf("| processes | baseline transactions/s | broker lease+release cycles/s | cycles per baseline transaction |\n");
  std::printf("| --- | --- | --- | --- |\n");
  for (int procs : {1, 4, 32}) {
    const double base = RunProcs(procs, seconds, baseline_cycle);
    const double broker = RunProcs(procs, seconds, broker_cycle);
    std::printf("| %d | %.0f | %.0f | %.2f |\n", procs, base, broker, broker / base);
    std::fflush(stdout);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
