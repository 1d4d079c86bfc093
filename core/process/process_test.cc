#include "core/process/process.h"

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
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "core/process/fake_process_system.h"
#include "core/base/file_text.h"
#include "core/node/topology.h"

namespace ix {
namespace {

using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ix-process-test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Slurp(const std::string& path) {
  int err = 0;
  return ReadFileText(path, &err);
}

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

// Waits for a spawned child and returns its wait status.
int Reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

const std::vector<std::string> kEnv = {"PATH=/usr/bin:/bin"};

SpawnSpec Spec(std::vector<std::string> argv, const std::string& log) {
  SpawnSpec s;
  s.name = "engine";
  s.argv = std::move(argv);
  s.env = kEnv;
  s.log_path = log;
  return s;
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

// ---- /proc ------------------------------------------------------------------

TEST(ProcStat, ParsesACommWithSpacesAndParentheses) {
  const std::string text =
      "4242 (a) b (c)) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n";
  Result<ProcessInfo> p = ParseProcStat(text, "/proc/4242/stat");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p.value().pid, 4242);
  EXPECT_EQ(p.value().comm, "a) b (c)");
  EXPECT_EQ(p.value().state, 'S');
  EXPECT_EQ(p.value().ppid, 17);
  EXPECT_EQ(p.value().pgid, 4242);
  EXPECT_EQ(p.value().sid, 4242);
  EXPECT_EQ(p.value().start_time, 987654u);
  EXPECT_FALSE(p.value().exited());

  Result<ProcessInfo> bad = ParseProcStat("12 (x) Z 1 2", "/proc/12/stat");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("/proc/12/stat: too few fields"), std::string::npos) << bad.error().message;
}

TEST(ProcStat, ReadsThisProcess) {
  Result<ProcessInfo> me = ReadProcessInfo(::getpid());
  ASSERT_TRUE(me.ok()) << me.error().message;
  EXPECT_EQ(me.value().pid, ::getpid());
  EXPECT_EQ(me.value().ppid, ::getppid());
  EXPECT_EQ(me.value().pgid, ::getpgrp());
  EXPECT_GT(me.value().start_time, 0u);
  EXPECT_TRUE(IsRunning(me.value().id()));
  EXPECT_FALSE(IsRunning({me.value().pid, me.value().start_time + 1}));  // a recycled pid
  EXPECT_FALSE(ReadProcessInfo(0x3fffffff).ok());
}

TEST(ProcStat, ListProcessesHasThisProcessAndItsChildAsReadOneByOne) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  Result<std::vector<ProcessInfo>> all = ListProcesses();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(all.ok()) << all.error().message;
  Result<ProcessInfo> me = ReadProcessInfo(::getpid());
  ASSERT_TRUE(me.ok());
  int seen = 0;
  for (const ProcessInfo& p : all.value()) {
    if (p.pid == ::getpid()) {
      ++seen;
      EXPECT_EQ(p.comm, me.value().comm);
      EXPECT_EQ(p.ppid, me.value().ppid);
      EXPECT_EQ(p.pgid, me.value().pgid);
      EXPECT_EQ(p.start_time, me.value().start_time);
    } else if (p.pid == child) {
      ++seen;
      EXPECT_EQ(p.ppid, ::getpid());
      EXPECT_GE(p.start_time, me.value().start_time);
    }
  }
  EXPECT_EQ(seen, 2);
  EXPECT_GT(all.value().size(), 2u);  // init, at least
}

TEST(ProcessTree, DescendantsByParentPidBreadthFirst) {
  auto P = [](pid_t pid, pid_t ppid) {
    ProcessInfo p;
    p.pid = pid;
    p.ppid = ppid;
    p.comm = "p" + std::to_string(pid);
    return p;
  };
  const std::vector<ProcessInfo> table = {P(1, 0), P(10, 1), P(12, 11), P(11, 10), P(13, 10), P(20, 1), P(14, 12)};
  std::vector<pid_t> got;
  for (const ProcessInfo& p : DescendantsIn(table, 10)) got.push_back(p.pid);
  EXPECT_EQ(got, (std::vector<pid_t>{11, 13, 12, 14}));
  EXPECT_TRUE(DescendantsIn(table, 14).empty());
}

// ---- spawning ---------------------------------------------------------------

TEST(Spawn, EchoGetsExactlyItsArgvNoShellAndAppendsToTheLog) {
  TempDir d;
  const std::string log = d.path() + "/server.log";
  std::ofstream(log) << "before\n";
  SpawnSpec s = Spec({"echo", "a  b", "$HOME", "*", "'q'", ""}, log);
  EXPECT_EQ(RunToLog(s), "before\na  b $HOME * 'q' \n");
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
}

TEST(Spawn, NewLogIsCreated0644) {
  TempDir d;
  const std::string log = d.path() + "/new.log";
  const mode_t old = ::umask(022);
  EXPECT_EQ(RunToLog(Spec({"/bin/echo", "hi"}, log)), "hi\n");
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST(Spawn, TheEnvironmentIsExactlyTheOneGiven) {
  TempDir d;
  SpawnSpec s = Spec({"env"}, d.path() + "/env.log");
  s.env = BuildEnvironment({"PATH=/usr/bin:/bin", "HOME=/root", "LANG=C"},
                           {{"HOME", "/home/u"}, {"VLLM_X", "a b=c"}, {"EMPTY", ""}});
  EXPECT_EQ(RunToLog(s), "PATH=/usr/bin:/bin\nHOME=/home/u\nLANG=C\nVLLM_X=a b=c\nEMPTY=\n");
}

TEST(Spawn, StderrGoesToTheLogStdinIsDevNull) {
  TempDir d;
  SpawnSpec s = Spec({"/bin/sh", "-c", "echo out; echo err >&2; readlink /proc/self/fd/0; cat; echo end"},
                     d.path() + "/log");
  EXPECT_EQ(RunToLog(s), "out\nerr\n/dev/null\nend\n");
}

TEST(Spawn, NoOtherDescriptorIsInherited) {
  TempDir d;
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
  TempDir d;
  const int saved_in = ::dup(0);
  ::close(0);
  SpawnSpec s = Spec({"/bin/sh", "-c", "echo ok; readlink /proc/self/fd/0"}, d.path() + "/log");
  const std::string out = RunToLog(s);
  ::dup2(saved_in, 0);
  ::close(saved_in);
  EXPECT_EQ(out, "ok\n/dev/null\n");
}

TEST(Spawn, WorkingDirectory) {
  TempDir d;
  SpawnSpec s = Spec({"pwd"}, d.path() + "/log");
  s.cwd = d.path();
  EXPECT_EQ(RunToLog(s), d.path() + "\n");
}

TEST(Spawn, SignalsAreResetAndUnblockedInTheChild) {
  TempDir d;
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
  TempDir d;
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
  TempDir d;
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
  TempDir d;
  std::filesystem::create_directories(d.path() + "/a");
  std::filesystem::create_directories(d.path() + "/b");
  std::ofstream(d.path() + "/b/tool") << "#!/bin/sh\necho b \"$@\"\n";
  ::chmod((d.path() + "/b/tool").c_str(), 0755);
  SpawnSpec s = Spec({"tool", "x"}, d.path() + "/log");
  s.env = {"PATH=" + d.path() + "/a:" + d.path() + "/b:/usr/bin:/bin"};
  EXPECT_EQ(RunToLog(s), "b x\n");
}

TEST(Spawn, BadWorkingDirectoryLogAndSpecAreErrors) {
  TempDir d;
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
  TempDir d;
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
  TempDir d;
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
  TempDir d;
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
  EXPECT_TRUE(WaitUntil([&] { return !IsRunning(id); }, 5000ms)) << "sleep outlived its parent";
}

// ---- stopping: real processes -------------------------------------------------

// Reads a pid written by a test script.
pid_t ReadPid(const std::string& path) {
  pid_t pid = 0;
  std::ifstream(path) >> pid;
  return pid;
}

bool Gone(pid_t pid) {
  Result<ProcessInfo> p = ReadProcessInfo(pid);
  return !p || p.value().exited();
}

StopOptions Short() {
  StopOptions o;
  o.grace = 300ms;
  o.kill_wait = 5000ms;
  return o;
}

TEST(StopTree, KillsAGrandchildThatCalledSetsidAndIgnoresTerm) {
  TempDir d;
  const std::string pidfile = d.path() + "/grandchild";
  SpawnSpec s = Spec({"/bin/sh", "-c",
                      "setsid /bin/sh -c 'trap \"\" TERM; echo $$ > \"$PIDFILE.tmp\"; "
                      "mv \"$PIDFILE.tmp\" \"$PIDFILE\"; exec sleep 1000' & wait"},
                     d.path() + "/log");
  s.env.push_back("PIDFILE=" + pidfile);
  Result<SpawnedProcess> p = Spawn(s);
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

  const StopReport r = StopTree({child}, {}, Short());
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
  TempDir d;
  const std::string pidfile = d.path() + "/grandchild";
  // The child starts the escaper, then exits: the escaper is reparented.
  SpawnSpec s = Spec({"/bin/sh", "-c",
                      "setsid /bin/sh -c 'trap \"\" TERM; echo $$ > \"$PIDFILE.tmp\"; "
                      "mv \"$PIDFILE.tmp\" \"$PIDFILE\"; exec sleep 1000' & "
                      "while [ ! -e \"$PIDFILE\" ]; do sleep 0.01; done; sleep 0.5"},
                     d.path() + "/log");
  s.env.push_back("PIDFILE=" + pidfile);
  Result<SpawnedProcess> p = Spawn(s);
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
  StopReport r = StopTree({child}, {}, Short());
  EXPECT_TRUE(r.terminated.empty()) << r.Summary();
  EXPECT_FALSE(Gone(grandchild));

  r = StopTree({child}, known, Short());
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_TRUE(Gone(grandchild)) << r.Summary();
  ASSERT_EQ(r.killed.size(), 1u) << r.Summary();
  EXPECT_EQ(r.killed[0].pid, grandchild);
}

TEST(StopTree, ATreeThatHonoursTermNeedsNoKillAndStopsQuickly) {
  Result<SpawnedProcess> p = Spawn(Spec({"/bin/sh", "-c", "sleep 1000 & sleep 1000 & wait"}, ""));
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
  Result<SpawnedProcess> p = Spawn(Spec({"true"}, ""));
  ASSERT_TRUE(p.ok()) << p.error().message;
  const ProcessId child = p.value().id;
  ASSERT_TRUE(WaitUntil([&] { return Gone(child.pid); }, 5000ms));
  const StopReport r = StopTree({child}, {}, Short());
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_TRUE(r.terminated.empty()) << r.Summary();
  EXPECT_EQ(::waitpid(child.pid, nullptr, WNOHANG), -1);  // reaped
  EXPECT_EQ(r.Summary().rfind("stopped 0 processes in ", 0), 0u) << r.Summary();
}

// ---- stopping: the logic, with a fake OS ---------------------------------------

TEST(StopTreeLogic, TermThenKillWhatIgnoresIt) {
  FakeSystem sys;
  sys.Add(1, 0, 1, "init", 1);
  sys.Add(100, 1, 100, "ix-stepd", 10);
  sys.Add(200, 100, 200, "vllm", 20);
  sys.Add(201, 200, 200, "EngineCore_DP0", 21, /*ignores_term=*/true);
  sys.Add(202, 201, 202, "escaped", 22, /*ignores_term=*/true);  // setsid'd grandchild
  sys.Add(300, 1, 300, "bystander", 30);
  const StopReport r = StopTree({{200, 20}}, {}, Short(), sys);
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
  const StopReport r = StopTree({{100, 10}, {1, 1}}, {{100, 10}}, Short(), sys);
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
  const StopReport r = StopTree({{200, 20}}, {{201, 21}}, Short(), sys);
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
  const StopReport r = StopTree({{200, 20}}, {}, Short(), sys);
  EXPECT_TRUE(r.clean());
  EXPECT_TRUE(r.terminated.empty()) << r.Summary();
  EXPECT_TRUE(sys.group_signals.empty());
}

TEST(StopTreeLogic, GroupMembersOutsideTheParentChainAreStopped) {
  FakeSystem sys;
  sys.Add(200, 100, 200, "vllm", 20);
  sys.Add(210, 1, 200, "orphan-in-group", 30);  // parent died; still in our group
  const StopReport r = StopTree({{200, 20}}, {}, Short(), sys);
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
  const StopReport r = StopTree({{200, 20}}, {{201, 21}}, Short(), sys);
  EXPECT_TRUE(r.clean()) << r.Summary();
  EXPECT_EQ(SortedPids(r.terminated), (std::vector<pid_t>{200, 220}));
  EXPECT_EQ(SortedPids(r.killed), std::vector<pid_t>{200});
  EXPECT_FALSE(sys.Signalled(201, SIGTERM));
}

TEST(StopTreeLogic, WhatSurvivesKillIsReportedAsLeft) {
  FakeSystem sys;
  sys.Add(200, 100, 200, "vllm", 20, true);
  // A process in uninterruptible sleep: signals are accepted but do nothing.
  class Stuck final : public ProcessSystem {
   public:
    explicit Stuck(FakeSystem& f) : f_(f) {}
    Result<std::vector<ProcessInfo>> Snapshot() override { return f_.Snapshot(); }
    int Signal(const ProcessId&, int) override { return 0; }
    int SignalGroup(pid_t, int) override { return 0; }
    int SignalHeld(int, int) override { return 0; }
    bool HeldExited(int) override { return false; }
    void Reap(pid_t) override {}
    pid_t Self() override { return 100; }
    std::chrono::steady_clock::time_point Now() override { return f_.Now(); }
    void Sleep(std::chrono::milliseconds d) override { f_.Sleep(d); }

   private:
    FakeSystem& f_;
  } stuck(sys);
  StopOptions o = Short();
  o.kill_wait = 1000ms;
  const StopReport r = StopTree({{200, 20}}, {}, o, stuck);
  EXPECT_FALSE(r.clean());
  EXPECT_EQ(SortedPids(r.left), std::vector<pid_t>{200});
  EXPECT_GE(r.elapsed, 1300ms);
  EXPECT_NE(r.Summary().find("STILL THERE: vllm (200)"), std::string::npos) << r.Summary();
}

}  // namespace
}  // namespace ix
