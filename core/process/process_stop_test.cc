// StopTree when /proc is gone: what ix-stepd meets inside a Pyxis container
// whose rootfs was removed under it (its /proc mount detached).
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/process/fake_process_system.h"
#include "core/process/process.h"
#include "core/process/process_watch.h"

namespace ix {
namespace {

using namespace std::chrono_literals;

StopOptions Quick() {
  StopOptions o;
  o.grace = 300ms;
  o.kill_wait = 3000ms;
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
  const StopReport r = StopTree({{200, 20}}, {{201, 21}, {202, 22}}, Quick(), sys, held);
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
  // The first look works; /proc is gone by the next one.
  class LosesProc final : public ProcessSystem {
   public:
    explicit LosesProc(FakeSystem& f) : f_(f) {}
    Result<std::vector<ProcessInfo>> Snapshot() override {
      auto r = f_.Snapshot();
      f_.proc_gone = true;
      return r;
    }
    int Signal(const ProcessId& id, int sig) override { return f_.Signal(id, sig); }
    int SignalGroup(pid_t g, int sig) override { return f_.SignalGroup(g, sig); }
    int SignalHeld(int fd, int sig) override { return f_.SignalHeld(fd, sig); }
    bool HeldExited(int fd) override { return f_.HeldExited(fd); }
    void Reap(pid_t p) override { f_.Reap(p); }
    pid_t Self() override { return 100; }
    std::chrono::steady_clock::time_point Now() override { return f_.Now(); }
    void Sleep(std::chrono::milliseconds d) override { f_.Sleep(d); }

   private:
    FakeSystem& f_;
  } sys2(sys);
  const StopReport r = StopTree({{200, 20}}, {}, Quick(), sys2, {{"vllm", {200, 20}, 7}});
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
  SpawnSpec s;
  s.name = "tree";
  s.argv = {"/bin/sh", "-c", "(trap '' TERM; exec sleep 1000) & setsid sleep 1000 & wait"};
  s.env = {"PATH=/usr/bin:/bin"};
  Result<SpawnedProcess> p = Spawn(s);
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
  const StopReport r = StopTree({t.root.id}, known, Quick(), sys, w.value().Held());
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
    const StopReport r = StopTree({t.root.id}, known, Quick(), RealProcessSystem(), w.value().Held());
    // Through the pinned descriptor the stop still sees the tree: no error.
    _exit(r.clean() && r.terminated.size() == 3 && AllGone(t) ? 0 : 8);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: unshare, 5: tree, 6: umount, 7: /proc still there, 8: stop";
}

}  // namespace
}  // namespace ix
