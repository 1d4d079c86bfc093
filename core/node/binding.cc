#include "core/node/binding.h"
#include "core/base/file_text.h"
#include "core/base/proc_fs.h"
#include "core/base/text.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace ix {
namespace {

constexpr int kMpolBind = 2;  // MPOL_BIND from <linux/mempolicy.h>
constexpr size_t kWordBits = sizeof(unsigned long) * CHAR_BIT;

std::vector<unsigned long> Mask(const std::vector<int>& ids) {
  if (ids.empty()) return {};
  const size_t words = static_cast<size_t>(ids.back()) / kWordBits + 1;
  std::vector<unsigned long> mask(words, 0);
  for (int id : ids) {
    const auto i = static_cast<size_t>(id);
    mask[i / kWordBits] |= 1ul << (i % kWordBits);
  }
  return mask;
}


}  // namespace

BindingTarget BindingTargetOf(const RankPlacement& rank) {
  BindingTarget t;
  t.cpus = rank.cpus;
  if (rank.numa >= 0) t.numa = rank.numa;
  return t;
}

PreparedBinding PreparedBinding::Prepare(const BindingTarget& target, const Topology& machine) {
  PreparedBinding b;
  const std::vector<int> have = machine.AllCpus();
  std::vector<int> asked = target.cpus;
  std::sort(asked.begin(), asked.end());
  asked.erase(std::unique(asked.begin(), asked.end()), asked.end());
  std::vector<int> missing;
  for (int c : asked) {
    if (c >= 0 && std::binary_search(have.begin(), have.end(), c)) {
      b.cpus_.push_back(c);
    } else {
      missing.push_back(c);
    }
  }
  if (!missing.empty()) {
    b.notes_.push_back("CPUs " + FormatIdList(missing) + " do not exist on " + machine.source + " (CPUs " +
                       FormatIdList(have) + "); not bound to them");
    if (b.cpus_.empty()) b.notes_.push_back("no CPU binding: none of the CPUs asked for exists here");
  }
  if (target.numa) {
    const NumaNode* n = machine.FindNuma(*target.numa);
    if (n && *target.numa >= 0) {
      b.numa_ = *target.numa;
    } else {
      std::vector<int> nodes;
      for (const NumaNode& x : machine.numa_nodes) nodes.push_back(x.os_index);
      b.notes_.push_back("NUMA node " + std::to_string(*target.numa) + " does not exist on " + machine.source +
                         " (nodes " + FormatIdList(nodes) + "); memory not bound");
    }
  }
  b.cpu_mask_ = Mask(b.cpus_);
  if (b.numa_) b.node_mask_ = Mask({*b.numa_});
  return b;
}

int PreparedBinding::ApplyToSelf(const char** failed) const noexcept {
  if (!cpu_mask_.empty()) {
    if (sched_setaffinity(0, cpu_mask_.size() * sizeof(unsigned long),
                          reinterpret_cast<const cpu_set_t*>(cpu_mask_.data())) != 0) {
      if (failed) *failed = "sched_setaffinity";
      return errno;
    }
  }
  if (!node_mask_.empty()) {
    // maxnode is one more than the bits passed (the kernel drops the last).
    const unsigned long maxnode = node_mask_.size() * kWordBits + 1;
    if (syscall(SYS_set_mempolicy, kMpolBind, node_mask_.data(), maxnode) != 0) {
      if (failed) *failed = "set_mempolicy";
      return errno;
    }
  }
  return 0;
}

Status PreparedBinding::Apply() const {
  const char* failed = "";
  const int err = ApplyToSelf(&failed);
  if (err == 0) return Ok{};
  std::string what = std::string(failed) == "sched_setaffinity"
                         ? "binding to CPUs " + FormatIdList(cpus_)
                         : "binding memory to NUMA node " + std::to_string(numa_.value_or(-1));
  return Error{what + " failed: " + failed + ": " + std::strerror(err) +
               (err == EINVAL ? " (outside the cpuset this process may use?)" : "")};
}

Result<ProcBinding> ParseProcStatus(std::string_view text, const std::string& where) {
  ProcBinding b;
  bool have_cpus = false, have_mems = false;
  for (std::string_view line : Lines(text)) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    const std::string_view value = line.substr(colon + 1);
    if (key != "Cpus_allowed_list" && key != "Mems_allowed_list") continue;
    Result<std::vector<int>> ids = ParseIdList(value, where + ": " + std::string(key));
    if (!ids) return ids.error();
    if (key == "Cpus_allowed_list") {
      b.cpus = std::move(ids).value();
      have_cpus = true;
    } else {
      b.mems_allowed = std::move(ids).value();
      have_mems = true;
    }
  }
  if (!have_cpus) return Error{where + ": no Cpus_allowed_list line"};
  if (!have_mems) return Error{where + ": no Mems_allowed_list line"};
  return b;
}

Result<std::pair<std::string, std::vector<int>>> ParseNumaMapsPolicy(std::string_view text,
                                                                     const std::string& where) {
  const size_t nl = text.find('\n');
  const std::string_view line = text.substr(0, nl);
  const size_t sp = line.find(' ');
  if (line.empty() || sp == std::string_view::npos) return Error{where + ": no mapping line"};
  const std::string_view rest = line.substr(sp + 1);
  // Mode names as the kernel prints them (mpol_to_str), longest first.
  static const char* const kModes[] = {"weighted interleave", "prefer (many)", "interleave", "default",
                                       "prefer", "local", "bind"};
  for (const char* mode : kModes) {
    const std::string_view m(mode);
    if (rest.substr(0, m.size()) != m) continue;
    std::string_view tail = rest.substr(m.size());  // "=static:0-1 file=..." / ":0 ..." / " ..."
    const size_t stop = tail.find(' ');
    const std::string_view policy_tail = tail.substr(0, stop);
    std::vector<int> nodes;
    const size_t colon = policy_tail.find(':');
    if (colon != std::string_view::npos) {
      Result<std::vector<int>> ids = ParseIdList(policy_tail.substr(colon + 1), where + ": memory policy nodes");
      if (!ids) return ids.error();
      nodes = std::move(ids).value();
    }
    return std::make_pair(std::string(m) + std::string(policy_tail), nodes);
  }
  return Error{where + ": unknown memory policy in '" + std::string(line) + "'"};
}

Result<ProcBinding> ReadProcBinding(int pid) {
  const std::string rel = std::to_string(pid);
  const std::string dir = "/proc/" + rel;
  int err = 0;
  const std::string status = ReadFileTextAt(ProcDirFd(), rel + "/status", &err);
  if (err) return Error{dir + "/status: cannot read: " + std::strerror(err)};
  Result<ProcBinding> b = ParseProcStatus(status, dir + "/status");
  if (!b) return b;
  const std::string maps = ReadFileTextAt(ProcDirFd(), rel + "/numa_maps", &err, size_t{64} << 20);
  if (!err && !maps.empty()) {
    Result<std::pair<std::string, std::vector<int>>> pol = ParseNumaMapsPolicy(maps, dir + "/numa_maps");
    if (pol) {
      b.value().mempolicy = pol.value().first;
      b.value().mempolicy_nodes = pol.value().second;
    }
  }
  return b;
}

std::string DescribeBinding(const ProcBinding& b) {
  return "CPUs " + FormatIdList(b.cpus) + ", memory " + (b.mempolicy.empty() ? std::string("policy unknown") : b.mempolicy) +
         " (cpuset mems " + FormatIdList(b.mems_allowed) + ")";
}

}  // namespace ix
