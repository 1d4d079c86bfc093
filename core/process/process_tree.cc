#include "core/process/process_tree.h"

#include <set>

namespace ix {

std::vector<ProcessInfo> DescendantsIn(const std::vector<ProcessInfo>& table, pid_t root) {
  std::vector<ProcessInfo> out;
  std::set<pid_t> seen{root};
  std::vector<pid_t> frontier{root};
  for (size_t i = 0; i < frontier.size(); ++i) {
    for (const ProcessInfo& p : table) {
      if (p.ppid == frontier[i] && seen.insert(p.pid).second) {
        out.push_back(p);
        frontier.push_back(p.pid);
      }
    }
  }
  return out;
}

Result<std::vector<ProcessInfo>> ListDescendants(pid_t root) {
  Result<std::vector<ProcessInfo>> table = ListProcesses();
  if (!table) return table.error();
  return DescendantsIn(table.value(), root);
}

bool IsRunning(const ProcessId& id) {
  Result<ProcessInfo> p = ReadProcessInfo(id.pid);
  return p && p.value().start_time == id.start_time && !p.value().exited();
}

}  // namespace ix
