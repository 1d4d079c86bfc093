#include "core/node/binding.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ix {
namespace {

const std::string kFixtures = IX_SOURCE_DIR "/tests/fixtures/topology/";

Topology ThisMachine() {
  Result<Topology> t = DiscoverTopology();
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(t).value() : Topology{};
}

// ---- reading back ----

TEST(ProcStatus, ParsesCpusAndMemsAllowedLists) {
  const char kStatus[] =
      "Name:\tsleep\n"
      "Cpus_allowed:\tf0f\n"
      "Cpus_allowed_list:\t0-3,8,10-11\n"
      "Mems_allowed:\t00000000,00000003\n"
      "Mems_allowed_list:\t0-1\n"
      "voluntary_ctxt_switches:\t1\n";
  Result<ProcBinding> b = ParseProcStatus(kStatus, "/proc/7/status");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b.value().cpus, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(b.value().mems_allowed, (std::vector<int>{0, 1}));
  EXPECT_EQ(ParseProcStatus("Cpus_allowed_list:\t5\nMems_allowed_list:\t0\n", "s").value().cpus,
            std::vector<int>{5});
}

TEST(ProcStatus, MissingOrMalformedFieldsAreErrors) {
  EXPECT_EQ(ParseProcStatus("Mems_allowed_list:\t0\n", "/proc/7/status").error().message,
            "/proc/7/status: no Cpus_allowed_list line");
  EXPECT_EQ(ParseProcStatus("Cpus_allowed_list:\t0\n", "/proc/7/status").error().message,
            "/proc/7/status: no Mems_allowed_list line");
  const std::string bad =
      ParseProcStatus("Cpus_allowed_list:\t0-3,x\nMems_allowed_list:\t0\n", "/proc/7/status").error().message;
  EXPECT_EQ(bad.rfind("/proc/7/status: Cpus_allowed_list: 'x' in '0-3,x' is not an id or a range", 0), 0u) << bad;
}

TEST(ProcStatus, ListSyntaxRoundTrips) {
  for (const char* list : {"0", "0-1", "0-3,8,10-11", "1,3,5", "0-127", "64-127,192-255"}) {
    Result<std::vector<int>> ids = ParseIdList(list, "x");
    ASSERT_TRUE(ids.ok()) << list;
    EXPECT_EQ(FormatIdList(ids.value()), list);
  }
}

TEST(NumaMaps, ReadsTheTaskPolicyOffTheFirstMapping) {
  using P = std::pair<std::string, std::vector<int>>;
  auto pol = [](const char* text) {
    Result<P> r = ParseNumaMapsPolicy(text, "numa_maps");
    EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message);
    return r.ok() ? r.value() : P{};
  };
  EXPECT_EQ(pol("56498bc03000 bind:0 file=/usr/bin/sleep mapped=2 N0=2 kernelpagesize_kB=4\n"),
            (P{"bind:0", {0}}));
  EXPECT_EQ(pol("5650 default file=/usr/bin/head mapped=2 N0=2\n"), (P{"default", {}}));
  EXPECT_EQ(pol("5650 interleave:0-3 anon=1\n"), (P{"interleave:0-3", {0, 1, 2, 3}}));
  EXPECT_EQ(pol("5650 bind=static:1 heap anon=1\n"), (P{"bind=static:1", {1}}));
  EXPECT_EQ(pol("5650 prefer (many):0-1 anon=1\n"), (P{"prefer (many):0-1", {0, 1}}));
  EXPECT_EQ(pol("5650 weighted interleave:2-3 anon=1\n"), (P{"weighted interleave:2-3", {2, 3}}));
  EXPECT_EQ(pol("5650 local stack anon=1\n"), (P{"local", {}}));
  EXPECT_FALSE(ParseNumaMapsPolicy("", "numa_maps").ok());
  EXPECT_EQ(ParseNumaMapsPolicy("5650 sideways:0\n", "m").error().message,
            "m: unknown memory policy in '5650 sideways:0'");
}

TEST(ProcStatus, ReadsThisProcess) {
  Result<ProcBinding> b = ReadProcBinding(static_cast<int>(getpid()));
  ASSERT_TRUE(b.ok()) << b.error().message;
  Result<std::vector<int>> allowed = MakeSystemHostProbe()->AllowedCpus();
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(b.value().cpus, allowed.value());
  EXPECT_FALSE(b.value().mems_allowed.empty());
  Result<ProcBinding> gone = ReadProcBinding(-5);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().message, "/proc/-5/status: cannot read: No such file or directory");
}

// ---- preparing ----

TEST(Binding, WhatTheMachineLacksIsReportedNotBound) {
  const Topology machine = ThisMachine();
  const std::vector<int> cpus = machine.AllCpus();
  ASSERT_FALSE(cpus.empty());
  BindingTarget target;
  target.cpus = {cpus.front(), 4000};
  target.numa = 77;
  const PreparedBinding b = PreparedBinding::Prepare(target, machine);
  EXPECT_EQ(b.cpus(), std::vector<int>{cpus.front()});
  EXPECT_FALSE(b.numa().has_value());
  ASSERT_EQ(b.notes().size(), 2u);
  EXPECT_EQ(b.notes()[0].rfind("CPUs 4000 do not exist on this machine (CPUs " + FormatIdList(cpus) + ")", 0), 0u)
      << b.notes()[0];
  EXPECT_EQ(b.notes()[1].rfind("NUMA node 77 does not exist on this machine (nodes ", 0), 0u) << b.notes()[1];

  // Nothing at all that exists: nothing to apply, and applying is harmless.
  target.cpus = {4000, 4001};
  const PreparedBinding none = PreparedBinding::Prepare(target, machine);
  EXPECT_TRUE(none.cpus().empty());
  EXPECT_EQ(none.notes()[1], "no CPU binding: none of the CPUs asked for exists here");
  EXPECT_TRUE(none.Apply().ok());
}

TEST(Binding, TargetOfARankPlacement) {
  RankPlacement r;
  r.cpus = {16, 17};
  r.numa = 1;
  const BindingTarget t = BindingTargetOf(r);
  EXPECT_EQ(t.cpus, (std::vector<int>{16, 17}));
  EXPECT_EQ(t.numa, 1);
  r.numa = -1;
  EXPECT_FALSE(BindingTargetOf(r).numa.has_value());
}

// Forks a child that applies `b` and then execs `sleep 30`. Returns the
// child's pid once it has exec'd, or -1 with *child_errno and *failed set
// when the binding or the exec failed in the child.
pid_t SpawnBoundSleep(const PreparedBinding& b, int* child_errno, std::string* failed) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const char* what = "exec";
    int err = b.ApplyToSelf(&what);
    if (err == 0) {
      execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
      err = errno;
    }
    char msg[64] = {};
    std::memcpy(msg, &err, sizeof err);
    std::strncpy(msg + sizeof err, what, sizeof msg - sizeof err - 1);
    ssize_t ignored = write(fds[1], msg, sizeof msg);
    (void)ignored;
    _exit(127);
  }
  close(fds[1]);
  char msg[64] = {};
  const ssize_t n = read(fds[0], msg, sizeof msg);  // 0: closed by a successful exec
  close(fds[0]);
  if (n == 0) return pid;
  std::memcpy(child_errno, msg, sizeof *child_errno);
  *failed = msg + sizeof(int);
  waitpid(pid, nullptr, 0);
  return -1;
}

TEST(Binding, ARealChildGetsExactlyItsCoreAndNode) {
  const Topology machine = ThisMachine();
  Result<std::vector<int>> allowed = MakeSystemHostProbe()->AllowedCpus();
  ASSERT_TRUE(allowed.ok()) << allowed.error().message;
  // CPU 1 when there are two, else CPU 0; the memory of its NUMA node (0 here).
  const int cpu = allowed.value().size() >= 2 ? allowed.value()[1] : allowed.value()[0];
  int node = -1;
  for (const Core& c : machine.cores) {
    for (int x : c.cpus) {
      if (x == cpu) node = c.numa;
    }
  }
  ASSERT_GE(node, 0);
  const PreparedBinding b = PreparedBinding::Prepare(BindingTarget{{cpu}, node}, machine);
  ASSERT_TRUE(b.notes().empty()) << b.notes()[0];

  int err = 0;
  std::string failed;
  const pid_t pid = SpawnBoundSleep(b, &err, &failed);
  ASSERT_GT(pid, 0) << "the child failed: " << failed << ": " << std::strerror(err);
  Result<ProcBinding> got = ReadProcBinding(static_cast<int>(pid));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got.value().cpus, std::vector<int>{cpu}) << DescribeBinding(got.value());
  EXPECT_EQ(got.value().mempolicy, "bind:" + std::to_string(node)) << DescribeBinding(got.value());
  EXPECT_EQ(got.value().mempolicy_nodes, std::vector<int>{node});
  EXPECT_NE(std::find(got.value().mems_allowed.begin(), got.value().mems_allowed.end(), node),
            got.value().mems_allowed.end());
  if (node == 0 && machine.NumaNodesWithCpus().size() == 1) {
    EXPECT_EQ(DescribeBinding(got.value()), "CPUs " + std::to_string(cpu) + ", memory bind:0 (cpuset mems 0)");
  }
  std::printf("bound child: %s\n", DescribeBinding(got.value()).c_str());
}

TEST(Binding, AKernelRefusalIsReportedByTheChild) {
  // Prepared for a 128-CPU, 2-node machine, applied on this one: CPU 127
  // and node 1 are refused here (EINVAL), and the child says which call.
  const Topology machine = ThisMachine();
  if (machine.AllCpus().size() > 127 || machine.numa_nodes.size() > 1) GTEST_SKIP() << "machine too large";
  Result<Topology> hgx = LoadTopologyXml(kFixtures + "hgx-b300-2tib.xml");
  ASSERT_TRUE(hgx.ok());
  int err = 0;
  std::string failed;
  pid_t pid = SpawnBoundSleep(PreparedBinding::Prepare(BindingTarget{{127}, std::nullopt}, hgx.value()), &err, &failed);
  if (pid > 0) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);
  EXPECT_EQ(pid, -1);
  EXPECT_EQ(failed, "sched_setaffinity");
  EXPECT_EQ(err, EINVAL);
  pid = SpawnBoundSleep(PreparedBinding::Prepare(BindingTarget{{0}, 1}, hgx.value()), &err, &failed);
  if (pid > 0) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);
  EXPECT_EQ(pid, -1);
  EXPECT_EQ(failed, "set_mempolicy");
  EXPECT_EQ(err, EINVAL);
}

}  // namespace
}  // namespace ix
