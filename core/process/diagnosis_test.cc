// The diagnosis of hung servers: real forked processes (asleep, with a
// thread, listening sockets and children), fake py-spy scripts (one that
// answers, one that hangs, one that floods), and the ways writing fails.
#include "core/process/diagnosis.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <thread>

#include "core/base/unique_fd.h"
#include "core/process/spawn_test_helpers.h"
#include "tests/support/test.h"

namespace ix {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

bool AnyNoteHas(const DiagnosisReport& r, const std::string& what) {
  for (const std::string& n : r.notes) {
    if (Has(n, what)) return true;
  }
  return false;
}

// A child of the test that runs `body` in its own process group, then
// sleeps; it never returns into the test. Killed with its group and
// reaped at the end of the scope.
class ForkedChild {
 public:
  explicit ForkedChild(const std::function<void()>& body) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      body();
      for (;;) ::pause();
    }
    if (pid_ > 0) ::setpgid(pid_, pid_);  // on both sides, whichever runs first
  }
  ~ForkedChild() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    test::Reap(pid_);
  }
  ForkedChild(const ForkedChild&) = delete;
  ForkedChild& operator=(const ForkedChild&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

bool Asleep(pid_t pid) {
  Result<ProcessInfo> p = ReadProcessInfo(pid);
  return p && p.value().state == 'S';
}

// A fresh result directory, its descriptor, and options for it.
struct ResultDir {
  test::TempDir dir{"ix-diagnosis"};
  UniqueFd fd{::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};

  DiagnosisOptions Options(std::chrono::milliseconds budget) const {
    DiagnosisOptions o;
    o.result_dir_fd = fd.get();
    o.deadline = Clock::now() + budget;
    return o;
  }
  std::string Read(const std::string& name) const { return test::Slurp(dir.path() + "/" + name); }
  // An executable /bin/sh script NAME with `body`; its path.
  std::string Script(const std::string& name, const std::string& body) const {
    const std::string path = dir.path() + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body;
    ::chmod(path.c_str(), 0755);
    return path;
  }
};

// A listening TCP socket on `addr` (IPv4 or IPv6 loopback); its port, or 0.
int Listen(int family) {
  const int s = ::socket(family, SOCK_STREAM, 0);
  sockaddr_storage a{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&a);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *in;
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&a);
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_loopback;
    len = sizeof *in6;
  }
  if (s < 0 || ::bind(s, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(s, 1) != 0) return 0;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&a)->sin_port
                                 : reinterpret_cast<sockaddr_in6*>(&a)->sin6_port);
}

TEST(Diagnosis, DescribesASleepingProcessAndTheEndOfItsLog) {
  ResultDir rd;
  {
    std::ofstream log(rd.dir.path() + "/engine.log");
    for (int i = 1; i <= 100; ++i) log << "line " << i << "\n";
  }
  ForkedChild child([] {});
  ASSERT_TRUE(test::WaitUntil([&] { return Asleep(child.pid()); }, 2s));
  DiagnosisOptions o = rd.Options(3s);
  o.log_lines = 5;
  o.gpu_rows = "gpu 0: 100% 700 W";
  const DiagnosisReport r = DiagnoseProcesses({{"engine", child.pid(), "engine.log"}}, o);
  ASSERT_EQ(r.files, std::vector<std::string>{"diagnosis-engine.txt"});
  const std::string text = rd.Read("diagnosis-engine.txt");
  const std::string pid = std::to_string(child.pid());
  EXPECT_TRUE(Has(text, "ix diagnosis of 'engine' (pid " + pid + ")")) << text;
  EXPECT_TRUE(Has(text, "== process " + pid + " (")) << text;
  EXPECT_TRUE(Has(text, "state: S (sleeping)")) << text;
  EXPECT_TRUE(Has(text, "wchan: ")) << text;
  EXPECT_TRUE(Has(text, "threads (1): tid state wchan name\n  " + pid + " S ")) << text;
  EXPECT_TRUE(Has(text, "kernel stacks") || Has(text, "kernel stacks: unreadable: EACCES")) << text;
  EXPECT_TRUE(Has(text, "== log engine.log, last 5 lines\nline 96\nline 97\nline 98\nline 99\nline 100\n")) << text;
  EXPECT_FALSE(Has(text, "line 95\n")) << text;
  EXPECT_TRUE(Has(text, "== gpus\ngpu 0: 100% 700 W\n")) << text;
  EXPECT_FALSE(Has(text, "py-spy")) << text;
}

// A server whose faulthandler is registered on SIGUSR1 (its handler writes
// a stack to the log, as Python's does): its dump is in the file, after
// the log's end as it stood.
TEST(Diagnosis, CopiesTheFaulthandlerDumpOfAProcessThatCatchesSigusr1) {
  ResultDir rd;
  const std::string log = rd.dir.path() + "/engine.log";
  ForkedChild child([log] {
    const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    ::dup2(fd, 2);
    struct sigaction sa {};
    sa.sa_handler = [](int) {
      const char text[] = "Thread 0x00007f01 (most recent call first):\n  File \"core.py\", line 9 in busy_loop\n";
      (void)!::write(2, text, sizeof text - 1);
    };
    ::sigaction(SIGUSR1, &sa, nullptr);
  });
  ASSERT_TRUE(test::WaitUntil([&] { return Asleep(child.pid()); }, 2s));
  const DiagnosisReport r = DiagnoseProcesses({{"engine", child.pid(), "engine.log"}}, rd.Options(3s));
  const std::string text = rd.Read("diagnosis-engine.txt");
  EXPECT_TRUE(Has(text, "== SIGUSR1 (a faulthandler dump) sent to " + std::to_string(child.pid()))) << text;
  EXPECT_TRUE(Has(text, "gained after it:\nThread 0x00007f01 (most recent call first):\n  File \"core.py\"")) << text;
  DiagnosisOptions off = rd.Options(3s);
  off.dump_signal = 0;
  DiagnoseProcesses({{"engine", child.pid(), "engine.log"}}, off);
  EXPECT_FALSE(Has(rd.Read("diagnosis-engine.txt"), "SIGUSR1")) << "dump_signal 0 sends nothing";
}

// A server with a named thread, listening sockets and two children (as
// vLLM's API server has its EngineCores): every process of the tree, its
// threads and its sockets are in the one file. Also the time it takes.
TEST(Diagnosis, DescribesAWholeTreeWithThreadsAndSockets) {
  struct Setup {
    int port4 = 0, port6 = 0;
    pid_t children[2] = {0, 0};
  };
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ForkedChild server([&] {
    Setup s;
    s.port4 = Listen(AF_INET);
    s.port6 = Listen(AF_INET6);  // 0 where the machine has no IPv6
    std::thread worker([] {
      for (;;) ::pause();
    });
    ::pthread_setname_np(worker.native_handle(), "ixdiag-worker");  // named before the test looks
    worker.detach();
    for (pid_t& c : s.children) {
      c = ::fork();
      if (c == 0) {
        for (;;) ::pause();
      }
    }
    (void)!::write(p[1], &s, sizeof s);
  });
  ::close(p[1]);
  Setup s;
  ASSERT_EQ(::read(p[0], &s, sizeof s), static_cast<ssize_t>(sizeof s));
  ::close(p[0]);
  ASSERT_GT(s.port4, 0);
  ASSERT_TRUE(
      test::WaitUntil([&] { return Asleep(server.pid()) && Asleep(s.children[0]) && Asleep(s.children[1]); }, 2s));

  ResultDir rd;
  const Clock::time_point start = Clock::now();
  const DiagnosisReport r = DiagnoseProcesses({{"engine", server.pid(), ""}}, rd.Options(3s));
  const auto took = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  std::cout << "diagnosis of a 3-process tree (no py-spy): " << took << " ms\n";
  ASSERT_EQ(r.files.size(), 1u);
  const std::string text = rd.Read(r.files[0]);
  EXPECT_TRUE(Has(text, "processes (3): " + std::to_string(server.pid()) + " ")) << text;
  for (pid_t c : s.children) {
    EXPECT_TRUE(Has(text, "== process " + std::to_string(c) + " (")) << text;
  }
  EXPECT_TRUE(Has(text, "threads (2)")) << text;
  EXPECT_TRUE(Has(text, " ixdiag-worker\n")) << text;
  EXPECT_TRUE(Has(text, ": LISTEN 127.0.0.1:" + std::to_string(s.port4) + "\n")) << text;
  if (s.port6 > 0) {
    EXPECT_TRUE(Has(text, ": LISTEN [::1]:" + std::to_string(s.port6) + "\n")) << text;
  }
  EXPECT_LT(took, 1000.0);
}

TEST(Diagnosis, RunsPySpyOnEveryProcessAndKeepsItsOutput) {
  ResultDir rd;
  ForkedChild child([] {});
  DiagnosisOptions o = rd.Options(3s);
  o.py_spy = rd.Script("py-spy", "echo \"args: $*\"\necho 'Thread 0x1 (idle): \"MainThread\"'\n");
  const DiagnosisReport r = DiagnoseProcesses({{"engine", child.pid(), ""}}, o);
  ASSERT_EQ(r.files.size(), 1u);
  const std::string text = rd.Read(r.files[0]);
  const std::string pid = std::to_string(child.pid());
  EXPECT_TRUE(Has(text, "== py-spy dump --pid " + pid + ": exit 0 after ")) << text;
  EXPECT_TRUE(Has(text, "args: dump --pid " + pid + "\nThread 0x1 (idle): \"MainThread\"\n")) << text;
  EXPECT_FALSE(AnyNoteHas(r, "py-spy")) << r.notes[0];
}

// A py-spy that hangs (ptrace on a process stuck in the kernel can) is
// killed at the deadline with what it runs (a script's own children), what
// it wrote before is kept, and the call returns in time.
TEST(Diagnosis, KillsAPySpyThatHangsAtTheDeadline) {
  ResultDir rd;
  ForkedChild child([] {});
  DiagnosisOptions o = rd.Options(1s);
  const std::string pid_file = rd.dir.path() + "/sleep.pid";
  o.py_spy = rd.Script("py-spy", "echo started\nsleep 30 &\necho $! > " + pid_file + "\nwait\n");
  const Clock::time_point start = Clock::now();
  const DiagnosisReport r = DiagnoseProcesses({{"engine", child.pid(), ""}}, o);
  const Clock::duration took = Clock::now() - start;
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 1500ms);
  EXPECT_TRUE(AnyNoteHas(r, "engine: py-spy on pid " + std::to_string(child.pid()) + ": killed at the deadline"));
  ASSERT_EQ(r.files.size(), 1u);
  const std::string text = rd.Read(r.files[0]);
  EXPECT_TRUE(Has(text, ": killed at the deadline after ")) << text;
  EXPECT_TRUE(Has(text, "started\n")) << text;
  const pid_t sleeper = static_cast<pid_t>(std::stol("0" + test::Slurp(pid_file)));
  ASSERT_GT(sleeper, 0);
  EXPECT_TRUE(test::WaitUntil([&] { return test::Gone(sleeper); }, 1s));
}

TEST(Diagnosis, CutsAPySpyThatFloodsAndTheFileAtTheCap) {
  ResultDir rd;
  ForkedChild child([] {});
  DiagnosisOptions o = rd.Options(3s);
  o.max_file_bytes = 8192;
  o.py_spy = rd.Script("py-spy", "exec yes 'a stack line'\n");
  const Clock::time_point start = Clock::now();
  const DiagnosisReport r = DiagnoseProcesses({{"engine", child.pid(), ""}}, o);
  EXPECT_LT(Clock::now() - start, 1s);
  EXPECT_TRUE(AnyNoteHas(r, "killed: its output reached 8192 bytes"));
  ASSERT_EQ(r.files.size(), 1u);
  const std::string text = rd.Read(r.files[0]);
  EXPECT_EQ(text.size(), 8192u);
  EXPECT_TRUE(Has(text, "more than the cap of 8192]\n")) << text.substr(text.size() - 100);
}

TEST(Diagnosis, NotesAPySpyThatCannotRunOrHasNoTime) {
  ResultDir rd;
  ForkedChild child([] {});
  DiagnosisOptions o = rd.Options(3s);
  o.py_spy = rd.dir.path() + "/no-such-py-spy";
  DiagnosisReport r = DiagnoseProcesses({{"engine", child.pid(), ""}}, o);
  EXPECT_TRUE(AnyNoteHas(r, "not run: ENOENT"));
  o.deadline = Clock::now() - 1s;
  r = DiagnoseProcesses({{"engine", child.pid(), ""}}, o);
  EXPECT_TRUE(AnyNoteHas(r, "not run: the deadline passed"));
  EXPECT_EQ(r.files.size(), 1u);  // the root's /proc is read all the same
}

TEST(Diagnosis, MakesFileNamesSafeAndDistinct) {
  EXPECT_EQ(DiagnosisFileName("prefill/0 x"), "diagnosis-prefill_0_x.txt");
  EXPECT_EQ(DiagnosisFileName("../.."), "diagnosis-.._...txt");
  EXPECT_EQ(DiagnosisFileName(""), "diagnosis-_.txt");
  EXPECT_EQ(DiagnosisFileName(std::string(300, 'a')).size(), std::string("diagnosis-.txt").size() + 200);
  ResultDir rd;
  ForkedChild child([] {});
  const DiagnosisReport r =
      DiagnoseProcesses({{"prefill/0", child.pid(), ""}, {"prefill_0", child.pid(), ""}}, rd.Options(3s));
  const std::vector<std::string> want = {"diagnosis-prefill_0.txt",
                                         "diagnosis-prefill_0-" + std::to_string(child.pid()) + ".txt"};
  EXPECT_EQ(r.files, want);
  EXPECT_TRUE(Has(rd.Read(want[0]), "ix diagnosis of 'prefill/0'"));
}

TEST(Diagnosis, NotesAGoneProcessAndStillWritesItsLog) {
  ResultDir rd;
  std::ofstream(rd.dir.path() + "/router.log") << "panic: stopped forwarding\n";
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  test::Reap(gone);
  const DiagnosisReport r = DiagnoseProcesses({{"router", gone, "router.log"}}, rd.Options(3s));
  EXPECT_TRUE(AnyNoteHas(r, "router: process " + std::to_string(gone) + " is gone"));
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_TRUE(Has(rd.Read(r.files[0]), "panic: stopped forwarding\n"));
}

TEST(Diagnosis, AnUnwritableResultDirGivesNotesNotACrash) {
  ResultDir rd;
  ForkedChild child([] {});
  std::ofstream(rd.dir.path() + "/plain") << "x";
  UniqueFd file(::open((rd.dir.path() + "/plain").c_str(), O_RDONLY | O_CLOEXEC));
  for (int fd : {file.get(), -1}) {
    DiagnosisOptions o = rd.Options(3s);
    o.result_dir_fd = fd;
    const DiagnosisReport r = DiagnoseProcesses({{"engine", child.pid(), "engine.log"}}, o);
    EXPECT_TRUE(r.files.empty());
    EXPECT_TRUE(AnyNoteHas(r, "engine: cannot write result dir/diagnosis-engine.txt.tmp: "));
    EXPECT_TRUE(AnyNoteHas(r, "engine: log engine.log: empty or unreadable"));
  }
}

}  // namespace
}  // namespace ix
