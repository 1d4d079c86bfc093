#include "spank_plugin/step_backstop.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace ix {
namespace {

TEST(StepBackstop, ListenSocketsOnTheGivenPortsOnly) {
  const std::string tcp =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000:4E20 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0\n"
      "   1: 0100007F:4E21 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 222 1 0\n"
      "   2: 0100007F:4E20 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0\n"
      "   3: 0100007F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 444 1 0\n"
      "garbage\n";
  const std::vector<ListenSocket> s = ParseListenSockets(tcp, {20000, 20001});
  ASSERT_EQ(s.size(), 2u);  // the established one (01) and port 80 are not
  EXPECT_EQ(s[0].port, 20000);
  EXPECT_EQ(s[0].inode, 111u);
  EXPECT_EQ(s[1].port, 20001);
  EXPECT_EQ(s[1].inode, 222u);
  const std::string tcp6 =
      "   0: 00000000000000000000000000000000:4E22 00000000000000000000000000000000:0000 0A "
      "00000000:00000000 00:00000000 00000000  1000        0 555 1 0\n";
  ASSERT_EQ(ParseListenSockets(tcp6, {20002}).size(), 1u);
  EXPECT_EQ(ParseListenSockets(tcp6, {20002})[0].inode, 555u);
}

OwnedProcess P(pid_t pid, pid_t pgid, uint64_t start, uid_t uid, char state = 'S') {
  OwnedProcess p;
  p.info.pid = pid;
  p.info.pgid = pgid;
  p.info.start_time = start;
  p.info.state = state;
  p.uid = uid;
  return p;
}

std::vector<pid_t> Pids(const std::vector<ProcessInfo>& v) {
  std::vector<pid_t> out;
  for (const ProcessInfo& p : v) out.push_back(p.pid);
  return out;
}

TEST(StepBackstop, LeftoversAreRememberedProcessesListenersAndTheirGroups) {
  const std::vector<OwnedProcess> table = {
      P(1, 1, 1, 0),          // init: never
      P(50, 50, 5, 0),        // slurmstepd itself: never
      P(200, 200, 20, 1000),  // the engine, remembered
      P(201, 200, 21, 1000),  // EngineCore in its group
      P(202, 200, 22, 0),     // a root process in that group: not the user's
      P(300, 300, 99, 1000),  // pid 300 was remembered with start 30: recycled
      P(400, 400, 40, 1000),  // listens on a leased port
      P(401, 400, 41, 1000),  // its group
      P(500, 500, 50, 2000),  // listens too, but another user's
      P(600, 600, 60, 1000, 'Z'),  // remembered but a zombie
      P(700, 700, 70, 1000),  // a bystander of the same user
  };
  const std::vector<ProcessId> remembered = {{200, 20}, {300, 30}, {600, 60}, {50, 5}};
  const std::vector<ProcessInfo> left = Leftovers(table, remembered, {400, 500}, 1000, 50);
  EXPECT_EQ(Pids(left), (std::vector<pid_t>{200, 201, 400, 401}));
}

TEST(StepBackstop, FindsAProcessListeningOnALeasedPort) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 1) != 0 ||
        ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ::_exit(1);
    }
    const int port = ntohs(a.sin_port);
    (void)!::write(ready[1], &port, sizeof port);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  int port = 0;
  ASSERT_EQ(::read(ready[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  Result<std::vector<ProcessInfo>> left = FindLeftovers({}, {port}, ::getuid());
  ASSERT_TRUE(left.ok()) << left.error().message;
  EXPECT_EQ(Pids(left.value()), std::vector<pid_t>{child});
  Result<std::vector<ProcessInfo>> other = FindLeftovers({}, {port}, ::getuid() + 1);
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other.value().empty());  // not that user's
  // Remembered (ix-stepd's tree at the start of the end), with no port at all.
  Result<ProcessInfo> me = ReadProcessInfo(child);
  ASSERT_TRUE(me.ok());
  Result<std::vector<ProcessInfo>> known = FindLeftovers({me.value().id()}, {}, ::getuid() + 1);
  ASSERT_TRUE(known.ok());
  EXPECT_EQ(Pids(known.value()), std::vector<pid_t>{child});
  // Nothing running, nothing bound: nothing, without the full look.
  Result<std::vector<ProcessInfo>> none = FindLeftovers({{me.value().pid, me.value().start_time + 1}}, {port + 1}, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none.value().empty());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace ix
