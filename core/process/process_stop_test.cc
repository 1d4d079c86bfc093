// StopTree: real trees (a setsid'd grandchild that ignores TERM, one that
// escaped and was reparented, /proc gone: what ix-stepd meets inside a
// Pyxis container whose rootfs was removed under it) and the logic alone,
// with a fake OS.
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/process/fake_process_system.h"
#include "core/process/process.h"
#include "core/process/process_watch.h"
#include "core/process/spawn_test_helpers.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using namespace std::chrono_literals;
using test::Gone;
using test::Reap;
using test::Slurp;
using test::TempDir;
using test::WaitUntil;

StopOptions Quick(std::chrono::milliseconds kill_wait = 5000ms) {
  StopOptions o;
  o.grace = 300ms;
  o.kill_wait = kill_wait;
  return o;
}

TEST(StopTreeLogic, WithoutProcItSignalsHeldPidfdsAndRootGroups) {
  FakeSystem sys;
  sys.Add(200, 100, 200, "vllm", 20);
  sys.Add(201, 200, 200, "EngineCore_DP0", 21, /*ignores_term=*/true);
  sys.Add(202, 200, 202, "escaped", 22, /*ignores_term=*/true);  // own group: only its pidfd reaches it
  sys.Add(300, 1, 300, "bystander", 30);
  sys.pidfds = {{7, 200}, {8, 201}, {9, 202}};
  sys.proc_gone = true;
  const std::vector<HeldProcess> held = {{"vllm", {200, 20}, 7}, {"EngineCore_DP0", {201, 21}, 8},
                                         {"escaped", {202, 22}, 9}};
  const StopReport r = StopTree({{200, 20}}, {{201, 21}, {202, 22}}, Quick(3000ms), sys, held);
  EXPECT_TRUE(r.left.empty()) << r.Summary();
  EXPECT_FALSE(r.clean());  // the /proc error is reported
  EXPECT_NE(r.Summary().find("error: cannot list /proc"), std::string::npos) << r.Summary();
  EXPECT_EQ(r.groups, std::vector<pid_t>{200});
  EXPECT_TRUE(sys.Signalled(202, SIGTERM));
  EXPECT_TRUE(sys.Signalled(202, SIGKILL));
  EXPECT_EQ(sys.procs[201].info.state, 'Z');  // the group's KILL
  EXPECT_EQ(sys.procs[202].info.state, 'Z');
  EXPECT_EQ(sys.procs[300].info.state, 'S');
  EXPECT_FALSE(sys.Signalled(300, SIGTERM));
  // Both outlived the TERM and were killed: 201 by its group's KILL (before
  // its own pidfd's), 202 through its pidfd. Which signal got there first
  // does not change the report (it did, and made the report timing-bound).
  EXPECT_EQ(SortedPids(r.killed), (std::vector<pid_t>{201, 202})) << r.Summary();
}

TEST(StopTreeLogic, ProcLostDuringTheStopFinishesBlind) {
  FakeSystem sys;
  sys.Add(200, 100, 200, "vllm", 20, /*ignores_term=*/true);
  sys.pidfds = {{7, 200}};
  sys.lose_proc = true;  // the first look works; /proc is gone by the next one
  const StopReport r = StopTree({{200, 20}}, {}, Quick(3000ms), sys, {{"vllm", {200, 20}, 7}});
  EXPECT_TRUE(r.left.empty()) << r.Summary();
  EXPECT_NE(std::find(sys.group_signals.begin(), sys.group_signals.end(), std::make_pair(200, SIGKILL)),
            sys.group_signals.end()) << r.Summary();
  EXPECT_EQ(sys.procs[200].info.state, 'Z');
}

// The real OS with a Snapshot that always fails: the stop goes through the
// watch's pidfds and the root's process group alone.
class NoProc final : public ProcessSystem {
 public:
  Result<std::vector<ProcessInfo>> Snapshot() override { return Error{"cannot list /proc: gone"}; }
  int Signal(const ProcessId& id, int sig) override { return RealProcessSystem().Signal(id, sig); }
  int SignalGroup(pid_t g, int sig) override { return RealProcessSystem().SignalGroup(g, sig); }
  int SignalHeld(int fd, int sig) override { return RealProcessSystem().SignalHeld(fd, sig); }
  bool HeldExited(int fd) override { return RealProcessSystem().HeldExited(fd); }
  void Reap(pid_t p) override { RealProcessSystem().Reap(p); }
  pid_t Self() override { return ::getpid(); }
  std::chrono::steady_clock::time_point Now() override { return std::chrono::steady_clock::now(); }
  void Sleep(std::chrono::milliseconds d) override { std::this_thread::sleep_for(d); }
};

// sh (its own group) with a child that ignores TERM and a setsid'd one.
struct Tree {
  SpawnedProcess root;
  std::vector<ProcessInfo> descendants;
};

Tree StartTree(ProcessWatch& watch) {
  Result<SpawnedProcess> p =
      Spawn(test::TestSpec("tree", {"/bin/sh", "-c", "(trap '' TERM; exec sleep 1000) & setsid sleep 1000 & wait"}));
  EXPECT_TRUE(p.ok()) << (p ? "" : p.error().message);
  Tree t{p.value(), {}};
  EXPECT_TRUE(watch.AddChild(t.root.id, "tree").ok());
  for (int i = 0; i < 500 && t.descendants.size() < 2; ++i) {
    std::this_thread::sleep_for(10ms);
    Result<std::vector<ProcessInfo>> d = ListDescendants(t.root.id.pid);
    if (d && d.value().size() == 2 && d.value()[0].comm == "sleep" && d.value()[1].comm == "sleep") {
      t.descendants = watch.AddDescendants(t.root.id.pid, "tree").value();
    }
  }
  EXPECT_EQ(t.descendants.size(), 2u);
  return t;
}

bool AllGone(const Tree& t) {
  for (const ProcessInfo& d : t.descendants) {
    if (IsRunning(d.id())) return false;
  }
  return !IsRunning(t.root.id);
}

TEST(StopTree, BlindStopThroughPidfdsWhenProcCannotBeRead) {
  Result<ProcessWatch> w = ProcessWatch::Create();
  if (!w) GTEST_SKIP() << w.error().message;
  Tree t = StartTree(w.value());
  ASSERT_EQ(t.descendants.size(), 2u);
  std::vector<ProcessId> known;
  for (const ProcessInfo& d : t.descendants) known.push_back(d.id());
  NoProc sys;
  const StopReport r = StopTree({t.root.id}, known, Quick(3000ms), sys, w.value().Held());
  EXPECT_TRUE(r.left.empty()) << r.Summary();
  EXPECT_EQ(r.killed.size(), 1u) << r.Summary();  // the one that ignores TERM
  EXPECT_TRUE(AllGone(t)) << r.Summary();
  ::waitpid(t.root.id.pid, nullptr, 0);
}

// The real thing: /proc unmounted (detached) under a stop that pinned it at
// start (ProcDirFd), in a mount namespace of its own. Needs root.
TEST(StopTree, PinnedProcOutlivesItsMount) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a mount namespace)";
  ASSERT_GE(ProcDirFd(), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(3);
    Result<ProcessWatch> w = ProcessWatch::Create();
    if (!w) _exit(4);
    Tree t = StartTree(w.value());
    if (t.descendants.size() != 2) _exit(5);
    if (::umount2("/proc", MNT_DETACH) != 0) _exit(6);
    if (std::filesystem::exists("/proc/self/stat")) _exit(7);  // really gone by path
    std::vector<ProcessId> known;
    for (const ProcessInfo& d : t.descendants) known.push_back(d.id());
    const StopReport r = StopTree({t.root.id}, known, Quick(3000ms), RealProcessSystem(), w.value().Held());
    // Through the pinned descriptor the stop still sees the tree: no error.
    _exit(r.clean() && r.terminated.size() == 3 && AllGone(t) ? 0 : 8);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: unshare, 5: tree, 6: umount, 7: /proc still there, 8: stop";
}

// ---- real processes ------------------------------------------------------------

// Reads a pid written by a test script.
pid_t ReadPid(const std::string& path) {
  pid_t pid = 0;
  std::ifstream(path) >> pid;
  return pid;
}

// A shell that starts an escaper (it calls setsid, ignores TERM, writes
// its pid to DIR/grandchild and becomes `sleep`), then runs `then`.
SpawnSpec WithEscaper(const std::string& dir, const std::string& then) {
  SpawnSpec s = test::TestSpec("engine",
                               {"/bin/sh", "-c",
                                "setsid /bin/sh -c 'trap \"\" TERM; echo $$ > \"$PIDFILE.tmp\"; "
                                "mv \"$PIDFILE.tmp\" \"$PIDFILE\"; exec sleep 1000' & " + then},
                               dir + "/log");
  s.env.push_back("PIDFILE=" + dir + "/grandchild");
  return s;
}

TEST(StopTree, KillsAGrandchildThatCalledSetsidAndIgnoresTerm) {
  TempDir d("ix-stop-test");
  const std::string pidfile = d.path() + "/grandchild";
  Result<SpawnedProcess> p = Spawn(WithEscaper(d.path(), "wait"));
  ASSERT_TRUE(p.ok()) << p.error().message;
  const ProcessId child = p.value().id;
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(pidfile); }, 5000ms)) << Slurp(d.path() + "/log");
  const pid_t grandchild = ReadPid(pidfile);
  ASSERT_TRUE(WaitUntil([&] {
    Result<ProcessInfo> g = ReadProcessInfo(grandchild);
    return g && g.value().comm == "sleep";
  }, 5000ms));
  Result<ProcessInfo> g = ReadProcessInfo(grandchild);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g.value().sid, grandchild);     // its own session ...
  EXPECT_NE(g.value().pgid, child.pid);     // ... so a group kill misses it
  EXPECT_EQ(g.value().ppid, child.pid);

  const StopReport r = StopTree({child}, {}, Quick());
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_TRUE(Gone(grandchild)) << r.Summary();
  EXPECT_TRUE(Gone(child.pid)) << r.Summary();
  // The child was reaped by StopTree.
  EXPECT_EQ(::waitpid(child.pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  ASSERT_EQ(r.killed.size(), 1u) << r.Summary();
  EXPECT_EQ(r.killed[0].pid, grandchild);
  EXPECT_EQ(r.terminated.size(), 2u) << r.Summary();
  EXPECT_EQ(r.groups, std::vector<pid_t>{child.pid});
  EXPECT_GE(r.elapsed, 300ms);
  std::printf("%s\n", r.Summary().c_str());
}

TEST(StopTree, AProcessThatEscapedAndWasReparentedIsFoundThroughKnown) {
  TempDir d("ix-stop-test");
  const std::string pidfile = d.path() + "/grandchild";
  // The child starts the escaper, then exits: the escaper is reparented.
  Result<SpawnedProcess> p =
      Spawn(WithEscaper(d.path(), "while [ ! -e \"$PIDFILE\" ]; do sleep 0.01; done; sleep 0.5"));
  ASSERT_TRUE(p.ok()) << p.error().message;
  const ProcessId child = p.value().id;
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(pidfile); }, 5000ms));
  const pid_t grandchild = ReadPid(pidfile);
  // Seen as a descendant while the child lives (as at readiness).
  std::vector<ProcessId> known;
  ASSERT_TRUE(WaitUntil([&] {
    Result<std::vector<ProcessInfo>> ds = ListDescendants(child.pid);
    known.clear();
    bool found = false;
    for (const ProcessInfo& x : ds.value()) {
      known.push_back(x.id());
      found = found || (x.pid == grandchild && x.comm == "sleep");
    }
    return found;
  }, 5000ms));
  ASSERT_EQ(WIFEXITED(Reap(child.pid)), true);
  Result<ProcessInfo> g = ReadProcessInfo(grandchild);
  ASSERT_TRUE(g.ok());
  EXPECT_NE(g.value().ppid, child.pid);  // reparented

  // Without the snapshot nothing leads to it any more.
  StopReport r = StopTree({child}, {}, Quick());
  EXPECT_TRUE(r.terminated.empty()) << r.Summary();
  EXPECT_FALSE(Gone(grandchild));

  r = StopTree({child}, known, Quick());
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_TRUE(Gone(grandchild)) << r.Summary();
  ASSERT_EQ(r.killed.size(), 1u) << r.Summary();
  EXPECT_EQ(r.killed[0].pid, grandchild);
}

TEST(StopTree, ATreeThatHonoursTermNeedsNoKillAndStopsQuickly) {
  Result<SpawnedProcess> p = Spawn(test::TestSpec("engine", {"/bin/sh", "-c", "sleep 1000 & sleep 1000 & wait"}, ""));
  ASSERT_TRUE(p.ok()) << p.error().message;
  const ProcessId child = p.value().id;
  ASSERT_TRUE(WaitUntil([&] { return ListDescendants(child.pid).value().size() == 2; }, 5000ms));
  const std::vector<ProcessInfo> kids = ListDescendants(child.pid).value();
  StopOptions o;  // the default 5 s grace: must not be waited out
  const StopReport r = StopTree({child}, {}, o);
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_TRUE(r.killed.empty()) << r.Summary();
  EXPECT_EQ(r.terminated.size(), 3u) << r.Summary();
  EXPECT_LT(r.elapsed, 2000ms) << r.Summary();
  for (const ProcessInfo& k : kids) EXPECT_TRUE(Gone(k.pid));
  EXPECT_TRUE(Gone(child.pid));
}

TEST(StopTree, AnExitedUnreapedChildIsJustReaped) {
  Result<SpawnedProcess> p = Spawn(test::TestSpec("engine", {"true"}, ""));
  ASSERT_TRUE(p.ok()) << p.error().message;
  const ProcessId child = p.value().id;
  ASSERT_TRUE(WaitUntil([&] { return Gone(child.pid); }, 5000ms));
  const StopReport r = StopTree({child}, {}, Quick());
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_TRUE(r.terminated.empty()) << r.Summary();
  EXPECT_EQ(::waitpid(child.pid, nullptr, WNOHANG), -1);  // reaped
  EXPECT_EQ(r.Summary().rfind("stopped 0 processes in ", 0), 0u) << r.Summary();
}

// ---- the logic, with a fake OS ---------------------------------------------------

TEST(StopTreeLogic, TermThenKillWhatIgnoresIt) {
  FakeSystem sys;
  sys.Add(1, 0, 1, "init", 1);
  sys.Add(100, 1, 100, "ix-stepd", 10);
  sys.Add(200, 100, 200, "vllm", 20);
  sys.Add(201, 200, 200, "EngineCore_DP0", 21, /*ignores_term=*/true);
  sys.Add(202, 201, 202, "escaped", 22, /*ignores_term=*/true);  // setsid'd grandchild
  sys.Add(300, 1, 300, "bystander", 30);
  const StopReport r = StopTree({{200, 20}}, {}, Quick(), sys);
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_EQ(SortedPids(r.terminated), (std::vector<pid_t>{200, 201, 202}));
  EXPECT_EQ(SortedPids(r.killed), (std::vector<pid_t>{201, 202}));
  EXPECT_FALSE(sys.Signalled(300, SIGTERM));
  EXPECT_FALSE(sys.Signalled(100, SIGTERM));
  EXPECT_EQ(sys.procs[300].info.state, 'S');
  EXPECT_EQ(sys.reaped, std::vector<pid_t>{200});  // our child; the others are pid 1's zombies
  EXPECT_EQ(r.groups, std::vector<pid_t>{200});
  EXPECT_GE(r.elapsed, 300ms);
  EXPECT_LT(r.elapsed, 600ms);
  EXPECT_EQ(r.Summary().rfind("stopped 3 processes in 0.3", 0), 0u) << r.Summary();
  EXPECT_NE(r.Summary().find(" s; SIGTERM: vllm (200), EngineCore_DP0 (201), escaped (202); "
                             "SIGKILL: EngineCore_DP0 (201), escaped (202)"),
            std::string::npos)
      << r.Summary();
}

TEST(StopTreeLogic, NeverTheCallerOrItsGroup) {
  FakeSystem sys;
  sys.Add(100, 1, 100, "ix-stepd", 10);  // Self()
  sys.Add(150, 100, 100, "helper", 15);  // a child in the caller's group
  const StopReport r = StopTree({{100, 10}, {1, 1}}, {{100, 10}}, Quick(), sys);
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_TRUE(sys.signals.empty());
  EXPECT_TRUE(sys.group_signals.empty());
  EXPECT_EQ(sys.procs[100].info.state, 'S');
}

TEST(StopTreeLogic, ARecycledPidIsNeverSignalled) {
  FakeSystem sys;
  sys.Add(200, 100, 200, "vllm", 20);
  // 201 was EngineCore (start 21) when the snapshot was taken; the pid now
  // belongs to something else, outside the tree.
  sys.Add(201, 1, 201, "someone-else", 99);
  const StopReport r = StopTree({{200, 20}}, {{201, 21}}, Quick(), sys);
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_EQ(SortedPids(r.terminated), std::vector<pid_t>{200});
  EXPECT_FALSE(sys.Signalled(201, SIGTERM));
  EXPECT_EQ(sys.procs[201].info.state, 'S');
}

TEST(StopTreeLogic, AReusedGroupIdIsNotSignalled) {
  FakeSystem sys;
  // The root (200, start 20) is gone and reaped; pid 200 now leads a
  // foreign group.
  sys.Add(200, 1, 200, "foreign", 77);
  sys.Add(205, 200, 200, "foreign-kid", 78);
  const StopReport r = StopTree({{200, 20}}, {}, Quick(), sys);
  EXPECT_TRUE(r.clean());
  EXPECT_TRUE(r.terminated.empty()) << r.Summary();
  EXPECT_TRUE(sys.group_signals.empty());
}

TEST(StopTreeLogic, GroupMembersOutsideTheParentChainAreStopped) {
  FakeSystem sys;
  sys.Add(200, 100, 200, "vllm", 20);
  sys.Add(210, 1, 200, "orphan-in-group", 30);  // parent died; still in our group
  const StopReport r = StopTree({{200, 20}}, {}, Quick(), sys);
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_EQ(SortedPids(r.terminated), (std::vector<pid_t>{200, 210}));
}

TEST(StopTreeLogic, ZombiesCountAsGoneAndProcessesBornDuringTheGraceAreStopped) {
  FakeSystem sys;
  sys.Add(200, 100, 200, "vllm", 20, /*ignores_term=*/true);
  sys.Add(201, 1, 201, "zombie", 21);
  sys.procs[201].info.state = 'Z';  // pid 1 is slow to reap it
  ProcessInfo late;
  late.pid = 220;
  late.ppid = 200;
  late.pgid = 220;
  late.state = 'S';
  late.comm = "late";
  late.start_time = 40;
  sys.procs[200].spawn_on_term = {late};
  const StopReport r = StopTree({{200, 20}}, {{201, 21}}, Quick(), sys);
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_EQ(SortedPids(r.terminated), (std::vector<pid_t>{200, 220}));
  EXPECT_EQ(SortedPids(r.killed), std::vector<pid_t>{200});
  EXPECT_FALSE(sys.Signalled(201, SIGTERM));
}

TEST(StopTreeLogic, WhatSurvivesKillIsReportedAsLeft) {
  FakeSystem sys;
  sys.Add(200, 100, 200, "vllm", 20, true);
  sys.stuck = true;  // uninterruptible sleep: signals are accepted but do nothing
  StopOptions o = Quick();
  o.kill_wait = 1000ms;
  const StopReport r = StopTree({{200, 20}}, {}, o, sys);
  EXPECT_FALSE(r.clean());
  EXPECT_EQ(SortedPids(r.left), std::vector<pid_t>{200});
  EXPECT_GE(r.elapsed, 1300ms);
  EXPECT_NE(r.Summary().find("STILL THERE: vllm (200)"), std::string::npos) << r.Summary();
}

}  // namespace
}  // namespace ix
