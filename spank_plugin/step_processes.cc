#include "spank_plugin/step_processes.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "core/process/process.h"
#include "core/process/process_tree.h"

namespace ix {

std::vector<std::string> EngineMetricsUrls(const LaunchPlan& plan) {
  std::vector<std::string> urls;
  for (const PlannedProcess& p : plan.processes) {
    if ((p.name != "engine" && p.name.rfind("engine-", 0) != 0) || p.readiness.empty()) continue;
    const std::string& u = p.readiness.front().url;
    const size_t scheme = u.find("://");
    if (scheme == std::string::npos) continue;
    urls.push_back(u.substr(0, u.find('/', scheme + 3)) + "/metrics");
  }
  return urls;
}

std::string NarrowVisibleDevices(const std::optional<std::string>& visible, const std::vector<int64_t>& gpus) {
  std::vector<std::string> ids;
  if (visible && !visible->empty()) {
    size_t start = 0;
    while (start <= visible->size()) {
      const size_t comma = visible->find(',', start);
      ids.push_back(visible->substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  std::string out;
  for (int64_t g : gpus) {
    const std::string id = ids.empty() ? std::to_string(g)
                           : g >= 0 && static_cast<size_t>(g) < ids.size() ? ids[static_cast<size_t>(g)]
                                                                           : std::to_string(g);
    out += (out.empty() ? "" : ",") + id;
  }
  return out;
}

// SIGKILL to the client tasks and everything they started (on a failure),
// but never to ix-stepd (task 0's child) or what it started: the stop
// handles those. Slurm's end of the tasks (proctrack) is no substitute: a
// grandchild orphaned by its parent's death leaves the tree proctrack/linuxproc
// walks, and when slurmstepd is gone there is no proctrack at all.
void KillClientTrees(const std::vector<pid_t>& clients) {
  Result<std::vector<ProcessInfo>> table = ListProcesses();
  if (!table) {
    std::fprintf(stderr, "ix-stepd: %s: killing the client tasks only\n", table.error().message.c_str());
    for (pid_t c : clients) {
      if (c > 1) ::kill(c, SIGKILL);
    }
    return;
  }
  const pid_t self = ::getpid();
  std::set<pid_t> ours{self};
  for (const ProcessInfo& p : DescendantsIn(table.value(), self)) ours.insert(p.pid);
  std::vector<ProcessInfo> victims;
  for (pid_t c : clients) {
    if (c <= 1) continue;
    for (const ProcessInfo& p : table.value()) {
      if (p.pid == c) victims.push_back(p);
    }
    for (const ProcessInfo& p : DescendantsIn(table.value(), c)) {
      if (!ours.count(p.pid)) victims.push_back(p);
    }
  }
  std::string names;
  for (const ProcessInfo& p : victims) {
    if (p.exited() || RealProcessSystem().Signal(p.id(), SIGKILL) != 0) continue;
    names += (names.empty() ? "" : ", ") + p.comm + " (" + std::to_string(p.pid) + ")";
  }
  std::fprintf(stderr, "ix-stepd: SIGKILL to the client tasks: %s\n", names.empty() ? "none left" : names.c_str());
}


std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path || name.empty() || name.find('/') != std::string::npos) return "";
  const std::string dirs = path;
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t colon = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, colon - start);
    start = colon + 1;
    if (dir.empty() || dir[0] != '/') continue;  // a relative PATH entry is the working directory's: not trusted
    const std::string candidate = dir + "/" + name;
    struct stat st{};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

}  // namespace ix
