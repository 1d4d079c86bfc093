#include "spank_plugin/ix_stepd_launch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/base/file_text.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using namespace std::chrono_literals;

TEST(StepdLaunch, OpenRefusesWhatCannotBeExecuted) {
  test::TempDir d("ix-stepd-launch");
  Result<StepdHandles> missing = OpenStepdHandles(d.path() + "/nope", d.path());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot open ix-stepd " + d.path() + "/nope: No such file or directory"),
            std::string::npos)
      << missing.error().message;
  std::ofstream(d.path() + "/data") << "x";
  Result<StepdHandles> data = OpenStepdHandles(d.path() + "/data", d.path());
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.error().message.find("not an executable regular file"), std::string::npos);
  ASSERT_FALSE(OpenStepdHandles(d.path(), d.path()).ok());  // a directory
  std::filesystem::create_symlink(d.path(), d.path() + "/link");
  Result<StepdHandles> link = OpenStepdHandles("/bin/sh", d.path() + "/link");
  ASSERT_FALSE(link.ok());  // the run directory never through a symlink
  EXPECT_NE(link.error().message.find("cannot open the run directory"), std::string::npos);
}

// stepd.log planted by the job user as a FIFO (no reader) or a link is
// refused at once: the task must not block on it for ever.
TEST(StepdLaunch, APlantedLogIsRefusedWithoutBlocking) {
  test::TempDir d("ix-stepd-launch");
  Result<StepdHandles> h = OpenStepdHandles("/bin/sh", d.path());
  ASSERT_TRUE(h.ok()) << h.error().message;
  const std::vector<std::string> argv = {"ix-stepd", "-c", "echo ready >&3"};
  char env0[] = "PATH=/usr/bin:/bin";
  char* envp[] = {env0, nullptr};
  ASSERT_EQ(::mkfifo((d.path() + "/stepd.log").c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  Result<LaunchedStepd> l = LaunchStepd(h.value(), argv, envp);
  ASSERT_FALSE(l.ok()) << "launched with a FIFO as stepd.log";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  const int reader = ::open((d.path() + "/stepd.log").c_str(), O_RDONLY | O_NONBLOCK);  // with a reader too
  l = LaunchStepd(h.value(), argv, envp);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().message.find("stepd.log in the run directory: not a regular file"), std::string::npos)
      << l.error().message;
  ::close(reader);
  std::filesystem::remove(d.path() + "/stepd.log");
  std::filesystem::create_symlink("/dev/null", d.path() + "/stepd.log");
  EXPECT_FALSE(LaunchStepd(h.value(), argv, envp).ok());
  CloseStepdHandles(h.value());
}

// The program runs from its descriptor, with exactly stdio, the ready pipe
// and the run directory open, and its output in stepd.log.
TEST(StepdLaunch, RunsFromTheDescriptorWithOnlyItsDescriptors) {
  test::TempDir d("ix-stepd-launch");
  Result<StepdHandles> h = OpenStepdHandles("/bin/sh", d.path());
  ASSERT_TRUE(h.ok()) << h.error().message;
  const std::vector<std::string> argv = {
      "ix-stepd", "-c", "echo started; ls /proc/self/fd > /proc/self/fd/4/fds; echo ready >&3; read x; echo \"[$x]\""};
  char env0[] = "PATH=/usr/bin:/bin";
  char* envp[] = {env0, nullptr};
  Result<LaunchedStepd> l = LaunchStepd(h.value(), argv, envp);
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ(ReadReadyAnswer(l.value().ready_fd), "ready");
  int status = 0;
  ASSERT_EQ(::waitpid(l.value().pid, &status, 0), l.value().pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  int err = 0;
  EXPECT_EQ(ReadFileText(d.path() + "/stepd.log", &err), "started\n[]\n");  // stdin: empty
  std::istringstream fds(ReadFileText(d.path() + "/fds", &err));
  std::set<int> open;
  for (int fd; fds >> fd;) open.insert(fd);
  // 0-4, and the one ls opens to list them (the lowest free number).
  EXPECT_EQ(open, (std::set<int>{0, 1, 2, 3, 4, 5}));
  CloseStepdHandles(h.value());
}

TEST(StepdLaunch, AProgramThatCannotRunIsAnError) {
  test::TempDir d("ix-stepd-launch");
  const std::string script = d.path() + "/script";
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  ::chmod(script.c_str(), 0755);
  Result<StepdHandles> h = OpenStepdHandles(script, d.path());
  ASSERT_TRUE(h.ok());
  char* envp[] = {nullptr};
  // A script cannot run from a close-on-exec descriptor: the interpreter
  // would need /dev/fd/N after the exec. ix-stepd is an ELF program.
  Result<LaunchedStepd> l = LaunchStepd(h.value(), {"x"}, envp);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().message.find("cannot execute ix-stepd: No such file or directory"), std::string::npos)
      << l.error().message;
  CloseStepdHandles(h.value());
}

TEST(StepdLaunch, OtherTasksLearnAtOnceThatTheSupervisorFailedOrDied) {
  test::TempDir d("ix-stepd-launch");
  const int fd = ::open(d.path().c_str(), O_RDONLY | O_DIRECTORY);
  const auto far = std::chrono::steady_clock::now() + 60s;
  ASSERT_TRUE(WriteFileAtomicAt(fd, d.path(), "state", "ready\n").ok());
  EXPECT_TRUE(WaitForStepd(fd, far).ok());
  ASSERT_TRUE(WriteFileAtomicAt(fd, d.path(), "state", "failed\n").ok());
  EXPECT_FALSE(WaitForStepd(fd, far).ok());
  // Still "starting", and the supervisor is gone: no waiting for the deadline.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_TRUE(WriteFileAtomicAt(fd, d.path(), "state", "starting\n").ok());
  ASSERT_TRUE(WriteFileAtomicAt(fd, d.path(), "stepd.pid", std::to_string(dead) + "\n").ok());
  const auto start = std::chrono::steady_clock::now();
  Status w = WaitForStepd(fd, far);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("ix-stepd exited before the servers were ready"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  ::waitpid(dead, nullptr, 0);
  // Nothing at all: the deadline.
  ::unlink((d.path() + "/stepd.pid").c_str());
  Status t = WaitForStepd(fd, std::chrono::steady_clock::now() + 100ms);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("timed out"), std::string::npos);
  ::close(fd);
}

}  // namespace
}  // namespace ix
