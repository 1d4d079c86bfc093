// Binding: applying one rank's placement (its CPUs and its NUMA node's
// memory) to a process before it execs, and reading back what a process
// actually got so the real placement can be recorded.
//
// A binding is prepared in the parent: checked against this machine (CPUs
// and NUMA nodes it does not have are dropped and reported, never an abort)
// and turned into kernel masks, so that the child, between fork and exec,
// only makes two system calls: sched_setaffinity (CPUs) and
// set_mempolicy(MPOL_BIND) (memory from that node only). Both are
// async-signal-safe, allocate nothing, and survive execve. docs/PLACEMENT.md.
//
// Invariants of a PreparedBinding: cpus() are CPUs of the machine it was
// prepared for, sorted; numa(), when set, is a node of that machine; the
// masks match them exactly.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/node/placement.h"
#include "core/base/result.h"
#include "core/node/topology.h"

namespace ix {

// What to bind one process to.
struct BindingTarget {
  std::vector<int> cpus;    // PU os indices; empty = leave CPU affinity alone
  std::optional<int> numa;  // unset = leave the memory policy alone
};
BindingTarget BindingTargetOf(const RankPlacement& rank);

class PreparedBinding {
 public:
  // `machine` is this machine's topology (DiscoverTopology()).
  static PreparedBinding Prepare(const BindingTarget& target, const Topology& machine);

  const std::vector<int>& cpus() const { return cpus_; }
  std::optional<int> numa() const { return numa_; }
  // What was asked for but does not exist here, and so is not bound.
  const std::vector<std::string>& notes() const { return notes_; }

  // Applies the binding to the calling thread, which in a fork child is the
  // whole process. Async-signal-safe. Returns 0, or the errno of the call
  // that failed with `*failed` set to its name ("sched_setaffinity",
  // "set_mempolicy").
  int ApplyToSelf(const char** failed) const noexcept;
  // The same as a Status with a message (not for use after fork).
  Status Apply() const;

 private:
  std::vector<int> cpus_;
  std::optional<int> numa_;
  std::vector<std::string> notes_;
  std::vector<unsigned long> cpu_mask_;   // sched_setaffinity mask
  std::vector<unsigned long> node_mask_;  // set_mempolicy nodemask
};

// What a process actually has.
struct ProcBinding {
  std::vector<int> cpus;          // Cpus_allowed_list: its CPU affinity
  std::vector<int> mems_allowed;  // Mems_allowed_list: its cpuset's nodes (not the memory policy)
  // The task memory policy as /proc/PID/numa_maps shows it ("bind:0",
  // "interleave:0-3", "default", ...) and the nodes it names; "" / empty
  // when numa_maps could not be read.
  std::string mempolicy;
  std::vector<int> mempolicy_nodes;
};

// Parses /proc/PID/status text: Cpus_allowed_list and Mems_allowed_list
// (list syntax "0-3,8,10-11"). A missing or malformed field is an Error
// naming `where` and the field.
Result<ProcBinding> ParseProcStatus(std::string_view text, const std::string& where);
// The policy of the first mapping in /proc/PID/numa_maps text: the task's
// policy for every mapping without one of its own. Returns {policy, nodes}.
Result<std::pair<std::string, std::vector<int>>> ParseNumaMapsPolicy(std::string_view text,
                                                                     const std::string& where);
// Reads /proc/PID/status and, when readable, /proc/PID/numa_maps.
Result<ProcBinding> ReadProcBinding(int pid);
// "CPUs 1, memory bind:0 (cpuset mems 0)" for records and logs.
std::string DescribeBinding(const ProcBinding& binding);

}  // namespace ix
