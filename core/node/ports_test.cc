#include "core/node/ports.h"

#include "core/base/proc_fs.h"
#include "tests/support/test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

namespace ix {
namespace {

// Fakes for the logic tests: a prober with a set of busy ports, and a
// liveness oracle that says which owner ids are alive.
struct FakeProber : PortProber {
  std::set<int> busy;
  int probes = 0;
  bool IsFree(int port) override {
    ++probes;
    return !busy.count(port);
  }
};
struct FakeLiveness : OwnerLiveness {
  std::set<std::string> dead;
  bool IsAlive(const LeaseOwner& o) override { return !dead.count(o.id); }
};

// An ephemeral-range file for tests, so they do not depend on the host's.
std::string EphemeralFile(const test::TempDir& d, const std::string& content = "32768\t60999\n") {
  const std::string p = d.path() + "/ip_local_port_range";
  std::ofstream(p) << content;
  return p;
}

PortBrokerConfig Config(const test::TempDir& d, PortRange range) {
  PortBrokerConfig c;
  c.range = range;
  c.lease_dir = d.path() + "/leases";
  c.ephemeral_range_file = EphemeralFile(d);
  return c;
}

LeaseOwner Owner(const std::string& id) { return LeaseOwner{id, 1, 1, "boot", 0}; }

// The logic tests' start: a fresh lease directory, the fakes, and a broker
// over a range of them.
class PortBrokerLogic : public ::testing::Test {
 protected:
  Result<PortBroker> Open(PortRange range) { return PortBroker::Open(Config(d, range), prober, live); }

  test::TempDir d{"ix-ports-test"};
  FakeProber prober;
  FakeLiveness live;
};

TEST(PortRange, Parse) {
  EXPECT_EQ(ParsePortRange("20000-29999").value().size(), 10000);
  EXPECT_NE(ParsePortRange("29999-20000").error().message.find("reversed"), std::string::npos);
  EXPECT_NE(ParsePortRange("0-10").error().message.find("within 1-65535"), std::string::npos);
  EXPECT_NE(ParsePortRange("60000-70000").error().message.find("within 1-65535"), std::string::npos);
  EXPECT_NE(ParsePortRange("20000").error().message.find("expected LO-HI"), std::string::npos);
  EXPECT_FALSE(ParsePortRange("a-b").ok());
  EXPECT_EQ(ParsePortList("12000-12002,12010").value(), (std::vector<int>{12000, 12001, 12002, 12010}));
  EXPECT_FALSE(ParsePortList("12000-x").ok());
  // A job's environment is not trusted: 1-65535 would expand to 65,535 ports.
  Result<std::vector<int>> huge = ParsePortList("1-65535");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("more than 1024 ports"), std::string::npos) << huge.error().message;
  EXPECT_FALSE(ParsePortList(std::string(5000, '1')).ok());
}

TEST_F(PortBrokerLogic, LeasesNamedPortsAndBlocksAllOrNothing) {
  prober.busy = {20001};
  auto b = Open({20000, 20009});
  ASSERT_TRUE(b.ok()) << b.error().message;
  auto got = b.value().Lease(Owner("7.0"), {{"PORT", 1}, {"VLLM_PORT", 4}, {"ENGINE_PORT", 1}});
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got.value().size(), 3u);
  EXPECT_EQ(got.value()[0].first, 20000);
  EXPECT_EQ(got.value()[1].first, 20002);  // 20001 is busy: the block starts after it
  EXPECT_EQ(got.value()[1].count, 4);
  EXPECT_EQ(got.value()[2].first, 20006);
  // Too many for what is left: nothing more is leased.
  auto more = b.value().Lease(Owner("8.0"), {{"A", 1}, {"B", 3}});
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(b.value().List().value().size(), 3u);
  const std::string& msg = more.error().message;
  EXPECT_NE(msg.find("no free block of 3 ports for 'B' in 20000-20009 for 8.0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("asked for 4 port(s) (A, B[3])"), std::string::npos) << msg;
  EXPECT_NE(msg.find("6 leased, held by 7.0 (pid 1): 6 ports"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 in use by processes outside the broker"), std::string::npos) << msg;
  EXPECT_EQ(b.value().Release("7.0").value(), 3);
  EXPECT_TRUE(b.value().List().value().empty());
  EXPECT_EQ(b.value().Release("7.0").value(), 0);
}

TEST_F(PortBrokerLogic, ReclaimsLeasesOfDeadOwners) {
  auto b = Open({20000, 20001});
  ASSERT_TRUE(b.value().Lease(Owner("1.0"), {{"P", 2}}).ok());
  EXPECT_FALSE(b.value().Lease(Owner("2.0"), {{"P", 1}}).ok());
  live.dead.insert("1.0");
  auto got = b.value().Lease(Owner("2.0"), {{"P", 1}});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got.value()[0].first, 20000);
  EXPECT_EQ(b.value().List().value().size(), 1u);
}

TEST_F(PortBrokerLogic, ALeaseIsNeverDroppedWhileItsPortIsBound) {
  auto b = Open({20000, 20003});
  ASSERT_TRUE(b.value().Lease(Owner("4.0"), {{"PORT", 1}, {"RANKS", 2}}).ok());
  prober.busy = {20002};  // a server that outlived step 4.0 still holds a rank port
  std::vector<PortLease> kept;
  EXPECT_EQ(b.value().Release("4.0", &kept).value(), 1);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].name, "RANKS");
  // Its owner gone, the lease still stays while the port is bound ...
  live.dead.insert("4.0");
  EXPECT_EQ(b.value().List().value().size(), 1u);
  // ... and goes once it is free.
  prober.busy.clear();
  EXPECT_TRUE(b.value().List().value().empty());
}

TEST_F(PortBrokerLogic, AStepReleasesOnlyWhatItHolds) {
  auto b = Open({20000, 20009});
  const LeaseOwner live_step{"9.0", 100, 1000, "boot", 0};
  ASSERT_TRUE(b.value().Lease(live_step, {{"PORT", 1}}).ok());
  // Another slurmstepd with the same step id (job ids restart with
  // slurmctld's state), refused, releases what it holds: nothing.
  const LeaseOwner refused{"9.0", 200, 2000, "boot", 0};
  EXPECT_EQ(b.value().ReleaseHeldBy(refused).value(), 0);
  EXPECT_EQ(b.value().List().value().size(), 1u);
  LeaseOwner same_pid_new_process = live_step;
  same_pid_new_process.start_time += 1;
  EXPECT_EQ(b.value().ReleaseHeldBy(same_pid_new_process).value(), 0);
  EXPECT_EQ(b.value().ReleaseHeldBy(live_step).value(), 1);
  EXPECT_TRUE(b.value().List().value().empty());
}

TEST_F(PortBrokerLogic, SlurmReservedPortsComeFirst) {
  auto b = Open({20000, 20009});
  auto got = b.value().Lease(Owner("3.1"), {{"PORT", 1}, {"RPC", 2}, {"X", 1}}, {20005, 20006, 20007});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got.value()[0].first, 20005);
  EXPECT_EQ(got.value()[1].first, 20006);
  EXPECT_EQ(got.value()[2].first, 20000);  // reserved ones used up
}

TEST_F(PortBrokerLogic, ReservedPortsOutsideTheRangeAreNotUsed) {
  auto b = Open({20000, 20009});
  // From the job's environment: port 22, or the kernel's ephemeral range.
  auto got = b.value().Lease(Owner("3.2"), {{"PORT", 1}, {"X", 1}}, {22, 40000, 20003});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got.value()[0].first, 20003);
  EXPECT_EQ(got.value()[1].first, 20000);
}

TEST_F(PortBrokerLogic, BadConfigurationAndRequests) {
  PortBrokerConfig c = Config(d, {30000, 40000});
  auto overlap = PortBroker::Open(c, prober, live);
  ASSERT_FALSE(overlap.ok());
  EXPECT_NE(overlap.error().message.find("overlaps the kernel's ephemeral range 32768-60999"), std::string::npos);
  c.range = {20000, 10000};
  EXPECT_NE(PortBroker::Open(c, prober, live).error().message.find("LO <= HI"), std::string::npos);
  c = Config(d, {20000, 20009});
  c.lease_dir = "relative/dir";
  EXPECT_NE(PortBroker::Open(c, prober, live).error().message.find("absolute path"), std::string::npos);
  const std::string file = d.path() + "/a-file";
  std::ofstream(file) << "x";
  c.lease_dir = file;
  EXPECT_FALSE(PortBroker::Open(c, prober, live).ok());
  c.lease_dir = file + "/sub";
  EXPECT_NE(PortBroker::Open(c, prober, live).error().message.find("cannot create"), std::string::npos);
  const std::string open_dir = d.path() + "/world-writable";
  ::mkdir(open_dir.c_str(), 0777);
  ::chmod(open_dir.c_str(), 0777);
  c.lease_dir = open_dir;
  EXPECT_NE(PortBroker::Open(c, prober, live).error().message.find("not writable by group or others"),
            std::string::npos);
  // Nor is one reached through a link (as run_dir= is checked).
  const std::string link = d.path() + "/link";
  ASSERT_EQ(::mkdir((d.path() + "/fine").c_str(), 0700), 0);
  ASSERT_EQ(::symlink((d.path() + "/fine").c_str(), link.c_str()), 0);
  c.lease_dir = link;
  EXPECT_FALSE(PortBroker::Open(c, prober, live).ok());

  auto b = Open({20000, 20009});
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b.value().Lease(Owner("bad owner"), {{"P", 1}}).ok());
  EXPECT_FALSE(b.value().Lease(Owner("1.0"), {{"P", 1}, {"P", 1}}).ok());
  EXPECT_FALSE(b.value().Lease(Owner("1.0"), {{"P", 0}}).ok());
  EXPECT_FALSE(b.value().Lease(Owner("1.0"), {}).ok());
  EXPECT_TRUE(b.value().List().value().empty());
  ASSERT_TRUE(b.value().Lease(Owner("1.0"), {{"P", 1}}).ok());
  EXPECT_NE(b.value().Lease(Owner("1.0"), {{"Q", 1}}).error().message.find("already holds"), std::string::npos);
}

TEST_F(PortBrokerLogic, TheLeaseDirectoryAndItsFilesAreClosedToOthers) {
  PortBrokerConfig c = Config(d, {20000, 20009});
  c.lease_dir = d.path() + "/run/inferencex/ports";
  auto b = PortBroker::Open(c, prober, live);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b.value().Lease(Owner("1.0"), {{"PORT", 1}}).ok());
  struct stat st{};
  ASSERT_EQ(::stat(c.lease_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat((d.path() + "/run/inferencex").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);  // the parents stay open
  for (const char* f : {"/lock", "/leases"}) {
    ASSERT_EQ(::stat((c.lease_dir + f).c_str(), &st), 0) << f;
    EXPECT_EQ(st.st_mode & 07777, 0600u) << f;
  }
  // A directory an older version made 0755, with a 0644 lock, is closed.
  ASSERT_EQ(::chmod(c.lease_dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod((c.lease_dir + "/lock").c_str(), 0644), 0);
  auto again = PortBroker::Open(c, prober, live);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(again.value().List().ok());
  ASSERT_EQ(::stat(c.lease_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat((c.lease_dir + "/lock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(PortBrokerLogic, AHeldLockFailsTheStepAfterItsDeadlineNamingTheHolder) {
  PortBrokerConfig c = Config(d, {20000, 20009});
  c.lock_timeout = std::chrono::milliseconds(200);
  auto b = PortBroker::Open(c, prober, live);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b.value().List().ok());  // creates the lock file
  // Another process holds the lock (as `flock -s LOCK sleep 1000` would).
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    const int fd = ::open((c.lease_dir + "/lock").c_str(), O_RDONLY);
    if (fd < 0 || ::flock(fd, LOCK_SH) != 0) ::_exit(1);
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  char x = 0;
  ASSERT_EQ(::read(ready[0], &x, 1), 1);
  const auto start = std::chrono::steady_clock::now();
  auto got = b.value().Lease(Owner("2.0"), {{"PORT", 1}});
  const auto took = std::chrono::steady_clock::now() - start;
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message.find("cannot lock " + c.lease_dir + "/lock within 200 ms: held by pid " +
                                     std::to_string(holder)),
            std::string::npos)
      << got.error().message;
  EXPECT_GE(took, std::chrono::milliseconds(200));
  EXPECT_LT(took, std::chrono::seconds(5));
  // Released, the lock is taken again.
  EXPECT_TRUE(b.value().Lease(Owner("2.0"), {{"PORT", 1}}).ok());
}

TEST_F(PortBrokerLogic, CorruptLeaseTableIsAnErrorNotAnEmptyTable) {
  auto b = Open({20000, 20009});
  std::ofstream(d.path() + "/leases/leases") << "20000 1 P 1.0 1 1 boot 0\ngarbage\n";
  auto r = b.value().Lease(Owner("2.0"), {{"P", 1}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("leases:2: malformed lease line 'garbage'"), std::string::npos);
}

// --- Real OS: bind probes, process liveness, concurrency. ---

int Listen(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(s, 1) != 0) {
    ::close(s);
    return -1;
  }
  return s;
}

TEST(PortBrokerReal, ForeignListenerIsNeverLeased) {
  test::TempDir d("ix-ports-test");
  BindProber prober;
  ProcessLiveness live;
  const int lo = 21500;
  const int foreign = Listen(lo);
  ASSERT_GE(foreign, 0);
  EXPECT_FALSE(prober.IsFree(lo));
  auto b = PortBroker::Open(Config(d, {lo, lo + 2}), prober, live);
  auto got = b.value().Lease(MakeOwner("t.0", ::getpid()), {{"A", 1}, {"B", 1}});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got.value()[0].first, lo + 1);
  EXPECT_EQ(got.value()[1].first, lo + 2);
  auto none = b.value().Lease(MakeOwner("t.1", ::getpid()), {{"C", 1}});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("1 in use by processes outside the broker"), std::string::npos);
  ::close(foreign);
}

TEST(PortBrokerReal, LeasesOfAKilledHolderAreReclaimed) {
  test::TempDir d("ix-ports-test");
  BindProber prober;
  ProcessLiveness live;
  PortBrokerConfig c = Config(d, {21600, 21602});
  auto b = PortBroker::Open(c, prober, live);
  ASSERT_TRUE(b.ok());
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    auto mine = b.value().Lease(MakeOwner("victim.0", ::getpid()), {{"ALL", 3}});
    const char ok = mine.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &ok, 1);
    ::pause();
    ::_exit(0);
  }
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  EXPECT_FALSE(b.value().Lease(MakeOwner("next.0", ::getpid()), {{"P", 1}}).ok());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  auto got = b.value().Lease(MakeOwner("next.0", ::getpid()), {{"P", 3}});
  ASSERT_TRUE(got.ok()) << got.error().message;
  auto all = b.value().List().value();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].owner.id, "next.0");
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(PortBrokerReal, LivenessNoticesDeathRecycledPidsAndOtherBoots) {
  ProcessLiveness live;
  LeaseOwner me = MakeOwner("me", ::getpid());
  EXPECT_TRUE(live.IsAlive(me));
  LeaseOwner recycled = me;
  recycled.start_time += 1;
  EXPECT_FALSE(live.IsAlive(recycled));
  LeaseOwner other_boot = me;
  other_boot.boot_id = "another-boot";
  EXPECT_FALSE(live.IsAlive(other_boot));
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  LeaseOwner gone = MakeOwner("gone", child);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(live.IsAlive(gone));
}

// A killed owner that its parent has not reaped yet (a zombie still has its
// pid and start time, and kill(pid, 0) succeeds on it) is dead: its leases
// must not wait for the reaping.
TEST(PortBrokerReal, AZombieOwnerIsDead) {
  int hold[2];
  ASSERT_EQ(::pipe(hold), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    char c;
    ::close(hold[1]);
    (void)!::read(hold[0], &c, 1);
    ::_exit(0);
  }
  ::close(hold[0]);
  ProcessLiveness live;
  const LeaseOwner owner = MakeOwner("9.0", child);
  ASSERT_NE(owner.start_time, 0u);
  EXPECT_TRUE(live.IsAlive(owner));
  ::close(hold[1]);  // the child exits, and stays a zombie until waited for
  ASSERT_TRUE(test::WaitUntil(
      [&] {
        Result<ProcessInfo> p = ReadProcessInfo(child);
        return p && p.value().state == 'Z';
      },
      std::chrono::seconds(1)));
  EXPECT_EQ(LiveStartTime(child), 0u);
  EXPECT_FALSE(live.IsAlive(owner));
  ::waitpid(child, nullptr, 0);
}

// 32 processes lease, really listen on, and release ports in a loop against
// one lease directory. Two holders of one port would fail to listen.
TEST(PortBrokerReal, ConcurrentStepsNeverShareAPort) {
  test::TempDir d("ix-ports-test");
  PortBrokerConfig c = Config(d, {22000, 22199});
  // What is tested is exclusivity, not the lock's deadline (tested on its
  // own): 960 transactions in a queue of 32 take longer than 10 s under
  // ASan on a busy 2-core machine.
  c.lock_timeout = std::chrono::minutes(5);
  {
    BindProber prober;
    ProcessLiveness live;
    ASSERT_TRUE(PortBroker::Open(c, prober, live).ok());
  }
  constexpr int kProcs = 32, kRounds = 15;
  std::vector<pid_t> kids;
  for (int i = 0; i < kProcs; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      BindProber prober;
      ProcessLiveness live;
      auto b = PortBroker::Open(c, prober, live);
      if (!b) ::_exit(10);
      const std::string id = "job" + std::to_string(i) + ".0";
      for (int r = 0; r < kRounds; ++r) {
        auto got = b.value().Lease(MakeOwner(id, ::getpid()), {{"PORT", 1}, {"ENGINE", 1}, {"SCAN", 3}});
        if (!got) {
          std::fprintf(stderr, "%s: lease: %s\n", id.c_str(), got.error().message.c_str());
          ::_exit(11);
        }
        std::vector<int> socks;
        for (const auto& l : got.value()) {
          for (int p = l.first; p < l.first + l.count; ++p) {
            const int s = Listen(p);
            if (s < 0) {  // someone else holds "our" port
              std::fprintf(stderr, "%s: port %d (leased %s) cannot be listened on: %s\n", id.c_str(), p,
                           l.name.c_str(), std::strerror(errno));
              ::_exit(12);
            }
            socks.push_back(s);
          }
        }
        ::usleep(1000);
        for (int s : socks) ::close(s);
        if (auto rel = b.value().Release(id); !rel) {
          std::fprintf(stderr, "%s: release: %s\n", id.c_str(), rel.error().message.c_str());
          ::_exit(13);
        }
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  int failures = 0;
  for (pid_t k : kids) {
    int status = 0;
    ::waitpid(k, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failures;
      ADD_FAILURE() << "worker " << k << " exited with " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
  }
  EXPECT_EQ(failures, 0);
  BindProber prober;
  ProcessLiveness live;
  EXPECT_TRUE(PortBroker::Open(c, prober, live).value().List().value().empty());
}

}  // namespace
}  // namespace ix
