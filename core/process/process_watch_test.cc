#include "core/process/process_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>
#include <thread>

#include "core/process/spawn_test_helpers.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using namespace std::chrono_literals;

using test::Reap;
using test::WaitUntil;

ProcessId Start(std::vector<std::string> argv) {
  Result<SpawnedProcess> p = Spawn(test::TestSpec("test", std::move(argv)));
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p ? p.value().id : ProcessId{};
}

ProcessWatch NewWatch() {
  Result<ProcessWatch> w = ProcessWatch::Create();
  if (!w) {
    ADD_FAILURE() << w.error().message;
    std::abort();
  }
  return std::move(w).value();
}

ProcessExit WaitOne(ProcessWatch& w, std::chrono::milliseconds timeout = 5000ms) {
  Result<std::optional<ProcessExit>> e = w.Wait(timeout);
  EXPECT_TRUE(e.ok()) << e.error().message;
  EXPECT_TRUE(e.ok() && e.value().has_value()) << "no exit reported";
  return e.ok() && e.value() ? *e.value() : ProcessExit{};
}

TEST(ProcessWatch, AChildExitingWithStatusZeroCounts) {
  ProcessWatch w = NewWatch();
  const ProcessId id = Start({"true"});
  ASSERT_TRUE(w.AddChild(id, "engine").ok());
  EXPECT_EQ(w.size(), 1u);
  const ProcessExit e = WaitOne(w);
  EXPECT_EQ(e.label, "engine");
  EXPECT_EQ(e.id, id);
  EXPECT_TRUE(e.status_known);
  EXPECT_TRUE(e.exited);
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_EQ(e.Describe(), "engine (pid " + std::to_string(id.pid) + ") exited with status 0");
  EXPECT_EQ(w.size(), 0u);
  // WNOWAIT: still a zombie for StopTree or the caller to reap.
  EXPECT_EQ(::waitpid(id.pid, nullptr, WNOHANG), id.pid);
}

TEST(ProcessWatch, ExitCodesAndSignals) {
  ProcessWatch w = NewWatch();
  const ProcessId three = Start({"sh", "-c", "exit 3"});
  ASSERT_TRUE(w.AddChild(three, "router").ok());
  ProcessExit e = WaitOne(w);
  EXPECT_EQ(e.label, "router");
  EXPECT_EQ(e.exit_code, 3);
  Reap(three.pid);

  const ProcessId sleeper = Start({"sleep", "100"});
  ASSERT_TRUE(w.AddChild(sleeper, "engine").ok());
  Result<std::optional<ProcessExit>> none = w.Wait(50ms);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.value().has_value());
  ::kill(sleeper.pid, SIGKILL);
  e = WaitOne(w);
  EXPECT_FALSE(e.exited);
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_EQ(e.Describe(), "engine (pid " + std::to_string(sleeper.pid) + ") was killed by signal 9 (SIGKILL)");
  Reap(sleeper.pid);
}

TEST(ProcessWatch, TimeoutWaitsAboutThatLong) {
  ProcessWatch w = NewWatch();
  const ProcessId id = Start({"sleep", "100"});
  ASSERT_TRUE(w.AddChild(id, "engine").ok());
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::optional<ProcessExit>> r = w.Wait(100ms);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value().has_value());
  EXPECT_GE(took, 100ms);
  EXPECT_LT(took, 1000ms);
  StopTree({id}, {}, StopOptions{});
}

TEST(ProcessWatch, AGrandchildExitIsReportedWhileTheChildLives) {
  ProcessWatch w = NewWatch();
  // The child execs `sleep 1000` after starting `sleep 1`: the short sleep
  // is the child's child, and exits with status 0 on its own.
  const ProcessId child = Start({"sh", "-c", "sleep 1 & exec sleep 1000"});
  // Both exec'd: the forked shell that becomes `sleep 1` is named "sh"
  // until its exec.
  ASSERT_TRUE(WaitUntil([&] {
    Result<ProcessInfo> c = ReadProcessInfo(child.pid);
    Result<std::vector<ProcessInfo>> d = ListDescendants(child.pid);
    return c && c.value().comm == "sleep" && d && d.value().size() == 1 && d.value()[0].comm == "sleep";
  }, 5000ms));
  ASSERT_TRUE(w.AddChild(child, "engine").ok());
  Result<std::vector<ProcessInfo>> added = w.AddDescendants(child.pid, "engine");
  ASSERT_TRUE(added.ok()) << added.error().message;
  ASSERT_EQ(added.value().size(), 1u);
  const ProcessInfo grandchild = added.value()[0];
  EXPECT_EQ(w.size(), 2u);
  EXPECT_TRUE(w.Watching(grandchild.pid));

  const ProcessExit e = WaitOne(w);
  EXPECT_EQ(e.label, "engine/sleep");
  EXPECT_EQ(e.id, grandchild.id());
  EXPECT_FALSE(e.status_known);
  EXPECT_EQ(e.Describe(), "engine/sleep (pid " + std::to_string(grandchild.pid) +
                              ") exited (status unknown: not our child)");
  EXPECT_TRUE(IsRunning(child));  // the child lives on; its child's exit still counts
  EXPECT_EQ(w.size(), 1u);
  const StopReport r = StopTree({child}, {grandchild.id()}, StopOptions{});
  EXPECT_TRUE(r.clean()) << r.Summary();
}

TEST(ProcessWatch, DescendantFilterAndLabels) {
  ProcessWatch w = NewWatch();
  const ProcessId child = Start({"sh", "-c", "sleep 1000 & tail -f /dev/null & wait"});
  // Both exec'd (a child just forked is still called "sh").
  ASSERT_TRUE(WaitUntil([&] {
    const std::vector<ProcessInfo> d = ListDescendants(child.pid).value();
    return d.size() == 2 && std::all_of(d.begin(), d.end(), [](const ProcessInfo& p) { return p.comm != "sh"; });
  }, 5000ms));
  Result<std::vector<ProcessInfo>> added =
      w.AddDescendants(child.pid, "engine", [](const ProcessInfo& p) { return p.comm == "sleep"; });
  ASSERT_TRUE(added.ok()) << added.error().message;
  ASSERT_EQ(added.value().size(), 1u);
  EXPECT_EQ(added.value()[0].comm, "sleep");
  EXPECT_EQ(DescendantLabel("engine", added.value()[0]), "engine/sleep");
  const StopReport r = StopTree({child}, {}, StopOptions{});
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_EQ(WaitOne(w).label, "engine/sleep");
}

TEST(ProcessWatch, TheFdIsReadableWhenAnExitIsWaiting) {
  ProcessWatch w = NewWatch();
  const ProcessId id = Start({"sleep", "100"});
  ASSERT_TRUE(w.AddChild(id, "engine").ok());
  pollfd p{w.fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // nothing yet
  ::kill(id.pid, SIGTERM);
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  EXPECT_TRUE(p.revents & POLLIN);
  Result<std::optional<ProcessExit>> e = w.Wait(0ms);
  ASSERT_TRUE(e.ok() && e.value().has_value());
  EXPECT_EQ(e.value()->signal, SIGTERM);
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // reported once
  Reap(id.pid);
}

TEST(ProcessWatch, AProcessAlreadyGoneOrRecycledIsReportedAtOnce) {
  ProcessWatch w = NewWatch();
  const ProcessId gone = Start({"true"});
  Reap(gone.pid);
  ASSERT_TRUE(w.Add(gone, "engine/EngineCore_DP0").ok());
  // The pid of this very process, but with another start time: a recycled
  // pid, so the process meant has exited.
  Result<ProcessInfo> me = ReadProcessInfo(::getpid());
  ASSERT_TRUE(me.ok());
  ASSERT_TRUE(w.Add({me.value().pid, me.value().start_time + 1}, "old").ok());
  EXPECT_EQ(w.size(), 0u);
  pollfd p{w.fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 1);
  ProcessExit e = WaitOne(w, 0ms);
  EXPECT_EQ(e.label, "engine/EngineCore_DP0");
  EXPECT_FALSE(e.status_known);
  e = WaitOne(w, 0ms);
  EXPECT_EQ(e.label, "old");
  Result<std::optional<ProcessExit>> none = w.Wait(0ms);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.value().has_value());
  EXPECT_EQ(::poll(&p, 1, 0), 0);
}

TEST(ProcessWatch, WaitingOnNothingReturnsAtOnce) {
  ProcessWatch w = NewWatch();
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::optional<ProcessExit>> none = w.Wait(-1ms);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.value().has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1000ms);  // no wait (room for a busy machine)
}

TEST(ProcessWatch, AZombieDescendantIsNotWatched) {
  ProcessWatch w = NewWatch();
  // `true` exits at once and its parent, `sleep`, never reaps it.
  const ProcessId child = Start({"sh", "-c", "true & exec sleep 1000"});
  ASSERT_TRUE(WaitUntil([&] {
    Result<ProcessInfo> c = ReadProcessInfo(child.pid);
    const std::vector<ProcessInfo> ds = ListDescendants(child.pid).value();
    return c && c.value().comm == "sleep" && ds.size() == 1 && ds[0].exited();
  }, 5000ms));
  Result<std::vector<ProcessInfo>> added = w.AddDescendants(child.pid, "engine");
  ASSERT_TRUE(added.ok()) << added.error().message;
  EXPECT_TRUE(added.value().empty());
  EXPECT_EQ(w.size(), 0u);
  EXPECT_TRUE(StopTree({child}, {}, StopOptions{}).clean());
}

TEST(ProcessWatch, AddChildRefusesAProcessThatIsNotOurs) {
  ProcessWatch w = NewWatch();
  Result<ProcessInfo> parent = ReadProcessInfo(::getppid());
  ASSERT_TRUE(parent.ok());
  Status s = w.AddChild(parent.value().id(), "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("is not a child of this process"), std::string::npos) << s.error().message;
  EXPECT_TRUE(w.Add(parent.value().id(), "x").ok());  // watching it as a non-child is fine
  EXPECT_EQ(w.size(), 1u);
}

TEST(ProcessWatch, EveryExitIsReportedOnce) {
  ProcessWatch w = NewWatch();
  const ProcessId a = Start({"true"});
  const ProcessId b = Start({"sh", "-c", "exit 7"});
  ASSERT_TRUE(w.AddChild(a, "a").ok());
  ASSERT_TRUE(w.AddChild(b, "b").ok());
  ASSERT_TRUE(w.AddChild(b, "b").ok());  // twice is once
  EXPECT_EQ(w.size(), 2u);
  std::set<std::string> seen;
  seen.insert(WaitOne(w).label);
  seen.insert(WaitOne(w).label);
  EXPECT_EQ(seen, (std::set<std::string>{"a", "b"}));
  Result<std::optional<ProcessExit>> none = w.Wait(20ms);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.value().has_value());
  Reap(a.pid);
  Reap(b.pid);
}

TEST(ProcessWatch, MovedWatchKeepsWorking) {
  ProcessWatch w = NewWatch();
  const ProcessId id = Start({"true"});
  ASSERT_TRUE(w.AddChild(id, "engine").ok());
  ProcessWatch moved = std::move(w);
  EXPECT_EQ(WaitOne(moved).label, "engine");
  EXPECT_FALSE(w.Wait(0ms).ok());  // NOLINT: use after move is defined: an Error
  Reap(id.pid);
}

}  // namespace
}  // namespace ix
