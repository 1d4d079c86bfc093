// Spawn: the child gets exactly its argv, environment, descriptors,
// signals, group, binding and credentials; every failure says which step
// and why. Also the environment helpers.
#include "core/process/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/node/topology.h"
#include "core/process/process_tree.h"
#include "core/process/spawn_test_helpers.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using namespace std::chrono_literals;
using test::Reap;
using test::Slurp;
using test::TempDir;

SpawnSpec Spec(std::vector<std::string> argv, const std::string& log) {
  return test::TestSpec("engine", std::move(argv), log);
}

// Runs a spec to completion; returns its log.
std::string RunToLog(SpawnSpec spec) {
  Result<SpawnedProcess> p = Spawn(spec);
  EXPECT_TRUE(p.ok()) << p.error().message;
  if (!p) return "";
  const int status = Reap(p.value().id.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  return Slurp(spec.log_path);
}

// A field of /proc/PID/status ("Uid", "Groups"), whitespace as the kernel writes it.
std::string StatusField(const std::string& status, const std::string& key) {
  std::istringstream in(status);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 2);
      while (!v.empty() && v.back() == ' ') v.pop_back();  // "Groups:\t \n" when there are none
      return v;
    }
  }
  return "<missing>";
}

// ---- environment ------------------------------------------------------------

TEST(Environment, LaterEntriesOverrideInPlaceAndNewOnesAppend) {
  const std::vector<std::string> base = {"PATH=/bin", "HOME=/root", "A=1", "A=dup"};
  const EnvList adds = {{"HOME", "/home/u"}, {"NEW", "x=y"}, {"NEW", "z"}, {"EMPTY", ""}};
  EXPECT_EQ(BuildEnvironment(base, adds),
            (std::vector<std::string>{"PATH=/bin", "HOME=/home/u", "A=dup", "NEW=z", "EMPTY="}));
  EXPECT_EQ(FindEnv(base, "A"), "1");
  EXPECT_EQ(FindEnv(base, "PAT"), std::nullopt);
  EXPECT_EQ(FindEnv({"X="}, "X"), "");
}

TEST(Environment, CurrentEnvironmentIsThisProcesses) {
  ::setenv("IX_PROCESS_TEST_VAR", "v a l", 1);
  const std::vector<std::string> env = CurrentEnvironment();
  EXPECT_EQ(FindEnv(env, "IX_PROCESS_TEST_VAR"), "v a l");
  ::unsetenv("IX_PROCESS_TEST_VAR");
}

// ---- spawning ---------------------------------------------------------------

TEST(Spawn, EchoGetsExactlyItsArgvNoShellAndAppendsToTheLog) {
  TempDir d("ix-spawn-test");
  const std::string log = d.path() + "/server.log";
  std::ofstream(log) << "before\n";
  SpawnSpec s = Spec({"echo", "a  b", "$HOME", "*", "'q'", ""}, log);
  EXPECT_EQ(RunToLog(s), "before\na  b $HOME * 'q' \n");
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
}

TEST(Spawn, NewLogIsCreated0644) {
  TempDir d("ix-spawn-test");
  const std::string log = d.path() + "/new.log";
  const mode_t old = ::umask(022);
  EXPECT_EQ(RunToLog(Spec({"/bin/echo", "hi"}, log)), "hi\n");
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST(Spawn, TheEnvironmentIsExactlyTheOneGiven) {
  TempDir d("ix-spawn-test");
  SpawnSpec s = Spec({"env"}, d.path() + "/env.log");
  s.env = BuildEnvironment({"PATH=/usr/bin:/bin", "HOME=/root", "LANG=C"},
                           {{"HOME", "/home/u"}, {"VLLM_X", "a b=c"}, {"EMPTY", ""}});
  EXPECT_EQ(RunToLog(s), "PATH=/usr/bin:/bin\nHOME=/home/u\nLANG=C\nVLLM_X=a b=c\nEMPTY=\n");
}

TEST(Spawn, StderrGoesToTheLogStdinIsDevNull) {
  TempDir d("ix-spawn-test");
  SpawnSpec s = Spec({"/bin/sh", "-c", "echo out; echo err >&2; readlink /proc/self/fd/0; cat; echo end"},
                     d.path() + "/log");
  EXPECT_EQ(RunToLog(s), "out\nerr\n/dev/null\nend\n");
}

TEST(Spawn, NoOtherDescriptorIsInherited) {
  TempDir d("ix-spawn-test");
  const int leak = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC on purpose
  ASSERT_GE(leak, 0);
  const int high = ::fcntl(leak, F_DUPFD, 200);
  // ls opens /proc/self/fd itself: that is the 3.
  EXPECT_EQ(RunToLog(Spec({"ls", "/proc/self/fd"}, d.path() + "/log")), "0\n1\n2\n3\n");
  ::close(leak);
  ::close(high);
}

TEST(Spawn, WorksWhenTheCallersStdioIsClosed) {
  // Descriptors the parent opens may be 0-2 then; they must not collide.
  TempDir d("ix-spawn-test");
  const int saved_in = ::dup(0);
  ::close(0);
  SpawnSpec s = Spec({"/bin/sh", "-c", "echo ok; readlink /proc/self/fd/0"}, d.path() + "/log");
  const std::string out = RunToLog(s);
  ::dup2(saved_in, 0);
  ::close(saved_in);
  EXPECT_EQ(out, "ok\n/dev/null\n");
}

TEST(Spawn, WorkingDirectory) {
  TempDir d("ix-spawn-test");
  SpawnSpec s = Spec({"pwd"}, d.path() + "/log");
  s.cwd = d.path();
  EXPECT_EQ(RunToLog(s), d.path() + "\n");
}

TEST(Spawn, SignalsAreResetAndUnblockedInTheChild) {
  TempDir d("ix-spawn-test");
  sigset_t usr1, old;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &usr1, &old);
  struct sigaction ign {}, prev {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGTERM, &ign, &prev);
  const std::string status = RunToLog(Spec({"cat", "/proc/self/status"}, d.path() + "/log"));
  ::sigaction(SIGTERM, &prev, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(StatusField(status, "SigBlk"), "0000000000000000");
  EXPECT_EQ(StatusField(status, "SigIgn"), "0000000000000000");
}

TEST(Spawn, OwnProcessGroupAndAnIdentity) {
  TempDir d("ix-spawn-test");
  Result<SpawnedProcess> p = Spawn(Spec({"sleep", "10"}, ""));
  ASSERT_TRUE(p.ok()) << p.error().message;
  const pid_t pid = p.value().id.pid;
  Result<ProcessInfo> info = ReadProcessInfo(pid);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info.value().pgid, pid);
  EXPECT_EQ(info.value().sid, ::getsid(0));  // a group, not a session
  EXPECT_EQ(info.value().ppid, ::getpid());
  EXPECT_EQ(info.value().comm, "sleep");  // it has exec'd when Spawn returns
  EXPECT_EQ(info.value().start_time, p.value().id.start_time);
  EXPECT_EQ(p.value().name, "engine");
  ::kill(pid, SIGKILL);
  Reap(pid);
}

TEST(Spawn, AMissingProgramNamesItAndThePath) {
  SpawnSpec s = Spec({"definitely-not-a-program-ix", "--port", "1"}, "");
  s.env = {"PATH=/nonexistent:/usr/bin"};
  Result<SpawnedProcess> p = Spawn(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "engine: cannot execute 'definitely-not-a-program-ix': No such file or directory "
            "(PATH=/nonexistent:/usr/bin)");

  s.argv = {"/nonexistent/vllm"};
  p = Spawn(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message, "engine: cannot execute '/nonexistent/vllm': No such file or directory");

  s.argv = {"vllm"};
  s.env = {"HOME=/"};
  p = Spawn(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message, "engine: cannot execute 'vllm': PATH is not set in its environment");
}

TEST(Spawn, NotExecutableAndNotABinaryAreRefusedNeverRunByAShell) {
  TempDir d("ix-spawn-test");
  const std::string plain = d.path() + "/plain";
  std::ofstream(plain) << "echo ran > " << d.path() << "/ran\n";
  ::chmod(plain.c_str(), 0644);
  SpawnSpec s = Spec({"plain"}, "");
  s.env = {"PATH=" + d.path()};
  Result<SpawnedProcess> p = Spawn(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message, "engine: cannot execute 'plain': Permission denied (PATH=" + d.path() + ")");

  ::chmod(plain.c_str(), 0755);  // executable, but no #! and not ELF: execvp would use /bin/sh
  p = Spawn(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message, "engine: cannot execute 'plain': Exec format error (PATH=" + d.path() + ")");
  EXPECT_FALSE(std::filesystem::exists(d.path() + "/ran"));
}

TEST(Spawn, PathIsSearchedInOrder) {
  TempDir d("ix-spawn-test");
  std::filesystem::create_directories(d.path() + "/a");
  std::filesystem::create_directories(d.path() + "/b");
  std::ofstream(d.path() + "/b/tool") << "#!/bin/sh\necho b \"$@\"\n";
  ::chmod((d.path() + "/b/tool").c_str(), 0755);
  SpawnSpec s = Spec({"tool", "x"}, d.path() + "/log");
  s.env = {"PATH=" + d.path() + "/a:" + d.path() + "/b:/usr/bin:/bin"};
  EXPECT_EQ(RunToLog(s), "b x\n");
}

TEST(Spawn, AnEmptyPathIsTheWorkingDirectory) {
  // As execvp reads it: one empty entry. The child looks after its chdir.
  TempDir d("ix-spawn-test");
  std::ofstream(d.path() + "/tool") << "#!/bin/sh\necho here\n";
  ::chmod((d.path() + "/tool").c_str(), 0755);
  SpawnSpec s = Spec({"tool"}, d.path() + "/log");
  s.env = {"PATH="};
  s.cwd = d.path();
  EXPECT_EQ(RunToLog(s), "here\n");
}

TEST(Spawn, BadWorkingDirectoryLogAndSpecAreErrors) {
  TempDir d("ix-spawn-test");
  SpawnSpec s = Spec({"true"}, "");
  s.cwd = d.path() + "/missing";
  Result<SpawnedProcess> p = Spawn(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "engine: cannot change to directory '" + d.path() + "/missing': No such file or directory");

  s = Spec({"true"}, d.path() + "/no/such/dir/server.log");
  p = Spawn(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "engine: cannot open log '" + d.path() + "/no/such/dir/server.log': No such file or directory");

  s = Spec({}, "");
  EXPECT_EQ(Spawn(s).error().message, "engine: no program given (argv is empty)");
  s = Spec({"true"}, "");
  s.env = {"PATH=/bin", "=x"};
  EXPECT_EQ(Spawn(s).error().message, "engine: environment entry '=x': expected NAME=VALUE");
  s.env = {"PATH=/bin"};
  s.argv = {"true", std::string("a\0b", 3)};
  EXPECT_EQ(Spawn(s).error().message, "engine: argv[1] holds a NUL byte");
}

Topology ThisMachine() {
  Result<Topology> t = DiscoverTopology();
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? std::move(t).value() : Topology{};
}

TEST(Spawn, TheBindingIsAppliedBeforeExec) {
  TempDir d("ix-spawn-test");
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  int cpu = -1;
  for (int i = CPU_SETSIZE - 1; i >= 0; --i) {
    if (CPU_ISSET(i, &set)) {
      cpu = i;
      break;
    }
  }
  ASSERT_GE(cpu, 0);
  const PreparedBinding b = PreparedBinding::Prepare(BindingTarget{{cpu}, std::nullopt}, ThisMachine());
  ASSERT_EQ(b.cpus(), std::vector<int>{cpu});
  SpawnSpec s = Spec({"cat", "/proc/self/status"}, d.path() + "/log");
  s.binding = &b;
  EXPECT_EQ(StatusField(RunToLog(s), "Cpus_allowed_list"), std::to_string(cpu));
}

TEST(Spawn, AFailedBindingIsAnErrorOrRecordedWhenBestEffort) {
  const Topology machine = ThisMachine();
  if (machine.AllCpus().size() > 127) GTEST_SKIP() << "machine has CPU 127";
  Result<Topology> hgx = LoadTopologyXml(IX_SOURCE_DIR "/tests/fixtures/topology/hgx-b300-2tib.xml");
  ASSERT_TRUE(hgx.ok()) << hgx.error().message;
  // Prepared for the 128-CPU node, applied here: the kernel refuses CPU 127.
  const PreparedBinding b = PreparedBinding::Prepare(BindingTarget{{127}, std::nullopt}, hgx.value());
  TempDir d("ix-spawn-test");
  SpawnSpec s = Spec({"cat", "/proc/self/status"}, d.path() + "/log");
  s.binding = &b;
  Result<SpawnedProcess> p = Spawn(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "engine: cannot apply the binding (CPUs 127): sched_setaffinity: Invalid argument "
            "(outside the cpuset this process may use?)");

  s.binding_best_effort = true;
  p = Spawn(s);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p.value().binding_error,
            "cannot apply the binding (CPUs 127): sched_setaffinity: Invalid argument "
            "(outside the cpuset this process may use?)");
  Reap(p.value().id.pid);
}

TEST(Spawn, DropsToAnotherUserWhenRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  TempDir d("ix-spawn-test");
  ::chmod(d.path().c_str(), 0755);
  const std::string log = d.path() + "/server.log";
  SpawnSpec s = Spec({"sleep", "10"}, log);
  s.credentials = Credentials{65534, 65534, {}};
  Result<SpawnedProcess> p = Spawn(s);
  ASSERT_TRUE(p.ok()) << p.error().message;
  const pid_t pid = p.value().id.pid;
  const std::string status = Slurp("/proc/" + std::to_string(pid) + "/status");
  ::kill(pid, SIGKILL);
  Reap(pid);
  EXPECT_EQ(StatusField(status, "Uid"), "65534\t65534\t65534\t65534");
  EXPECT_EQ(StatusField(status, "Gid"), "65534\t65534\t65534\t65534");
  EXPECT_EQ(StatusField(status, "Groups"), "");
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);  // the log belongs to the user
  EXPECT_EQ(st.st_gid, 65534u);

  // Supplementary groups, and what the user sees of its own ids.
  s = Spec({"id"}, d.path() + "/id.log");
  s.credentials = Credentials{65534, 65534, {65534, 100}};
  EXPECT_EQ(RunToLog(s), "uid=65534(nobody) gid=65534(nogroup) groups=65534(nogroup),100(users)\n");

  // The working directory is entered as the user.
  const std::string closed = d.path() + "/closed";
  ::mkdir(closed.c_str(), 0700);
  s = Spec({"true"}, "");
  s.cwd = closed;
  s.credentials = Credentials{65534, 65534, {}};
  p = Spawn(s);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message,
            "engine: cannot change to directory '" + closed + "' (as uid 65534): Permission denied");
}

TEST(Spawn, ANonRootCallerCannotSwitchUsers) {
  if (::geteuid() == 0) GTEST_SKIP() << "runs as root";
  SpawnSpec s = Spec({"true"}, "");
  s.credentials = Credentials{::geteuid() + 1, ::getegid(), {}};
  Result<SpawnedProcess> p = Spawn(s);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("only root can switch users"), std::string::npos) << p.error().message;
}

TEST(Spawn, ParentDeathSignal) {
  // A helper process spawns `sleep` with PR_SET_PDEATHSIG=SIGKILL, reports
  // its identity and exits; the sleeper must die with it.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t helper = ::fork();
  if (helper == 0) {
    ::close(fds[0]);
    SpawnSpec s = Spec({"sleep", "30"}, "");
    s.parent_death_signal = SIGKILL;
    Result<SpawnedProcess> p = Spawn(s);
    ProcessId id = p ? p.value().id : ProcessId{};
    ssize_t n = ::write(fds[1], &id, sizeof id);
    ::_exit(n == static_cast<ssize_t>(sizeof id) ? 0 : 1);
  }
  ::close(fds[1]);
  ProcessId id;
  ASSERT_EQ(::read(fds[0], &id, sizeof id), static_cast<ssize_t>(sizeof id));
  ::close(fds[0]);
  Reap(helper);
  ASSERT_GT(id.pid, 0);
  EXPECT_TRUE(test::WaitUntil([&] { return !IsRunning(id); }, 5000ms)) << "sleep outlived its parent";
}

}  // namespace
}  // namespace ix
