#include "node_agent/event_socket.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include "tests/support/test.h"

namespace ix {
namespace {

using ::ix::test::TempDir;

// A socket's test in a fresh directory: `path_` is where it binds.
class EventSocketTest : public ::testing::Test {
 protected:
  TempDir dir_{"ix-evsock"};
  const std::string path_ = dir_.path() + "/agent.sock";
};

TEST_F(EventSocketTest, BindsWithMode0666AndReceivesBytesAndCredentials) {
  Result<EventSocket> sock = EventSocket::Bind(path_);
  ASSERT_TRUE(sock) << sock.error().message;
  struct stat st{};
  ASSERT_EQ(::lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0666u);
  EXPECT_GT(sock.value().rcvbuf_bytes(), 0);
  const int flags = ::fcntl(sock.value().fd(), F_GETFL);
  EXPECT_TRUE(flags & O_NONBLOCK);
  EXPECT_TRUE(::fcntl(sock.value().fd(), F_GETFD) & FD_CLOEXEC);

  EXPECT_FALSE(sock.value().Receive().has_value());  // nothing queued: no wait
  ASSERT_TRUE(SendDatagram(path_, R"({"a":1})"));
  std::optional<ReceivedDatagram> got = sock.value().Receive();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->bytes, R"({"a":1})");
  EXPECT_TRUE(got->has_credentials);
  EXPECT_EQ(got->pid, ::getpid());
  EXPECT_EQ(got->uid, ::geteuid());
  EXPECT_EQ(got->gid, ::getegid());
  EXPECT_FALSE(got->fd.valid());
  EXPECT_FALSE(got->truncated);
  EXPECT_FALSE(got->bad_descriptors);
  EXPECT_FALSE(sock.value().Receive().has_value());
  EXPECT_EQ(sock.value().counters().received, 1u);
}

TEST_F(EventSocketTest, PassesOneDescriptorCloseOnExec) {
  Result<EventSocket> sock = EventSocket::Bind(path_);
  ASSERT_TRUE(sock) << sock.error().message;
  const std::string file = dir_.path() + "/result.txt";
  std::ofstream(file) << "payload";
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  ASSERT_TRUE(SendDatagram(path_, "{}", fd.get()));
  std::optional<ReceivedDatagram> got = sock.value().Receive();
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->fd.valid());
  EXPECT_NE(got->fd.get(), fd.get());
  EXPECT_TRUE(::fcntl(got->fd.get(), F_GETFD) & FD_CLOEXEC);
  char buf[16] = {};
  EXPECT_EQ(::pread(got->fd.get(), buf, sizeof buf, 0), 7);
  EXPECT_STREQ(buf, "payload");
}

// Sends `n` descriptors in one datagram, as a hostile sender could.
void SendWithDescriptors(const std::string& path, const std::vector<int>& fds, const std::string& text) {
  UniqueFd s(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  iovec iov{const_cast<char*>(text.data()), text.size()};
  std::vector<char> control(CMSG_SPACE(fds.size() * sizeof(int)));
  msghdr msg{};
  msg.msg_name = &addr;
  msg.msg_namelen = sizeof addr;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
  std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  ASSERT_EQ(::sendmsg(s.get(), &msg, 0), static_cast<ssize_t>(text.size())) << std::strerror(errno);
}

int CountOpenFds() {
  int n = 0;
  for (int fd = 0; fd < 1024; ++fd) n += ::fcntl(fd, F_GETFD) >= 0;
  return n;
}

TEST_F(EventSocketTest, MoreThanOneDescriptorIsFlaggedAndAllAreClosed) {
  Result<EventSocket> sock = EventSocket::Bind(path_);
  ASSERT_TRUE(sock) << sock.error().message;
  UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC)), b(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int before = CountOpenFds();
  SendWithDescriptors(path_, {a.get(), b.get()}, "{}");
  std::optional<ReceivedDatagram> got = sock.value().Receive();
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->bad_descriptors);
  EXPECT_FALSE(got->fd.valid());
  EXPECT_TRUE(got->bytes.empty());
  EXPECT_EQ(CountOpenFds(), before);  // none of the received copies is left open
  EXPECT_EQ(sock.value().counters().bad_descriptors, 1u);

  // Far more than the control buffer holds: the kernel cuts, we close.
  std::vector<int> many(40, a.get());
  SendWithDescriptors(path_, many, "{}");
  got = sock.value().Receive();
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->bad_descriptors);
  EXPECT_EQ(CountOpenFds(), before);
}

TEST_F(EventSocketTest, ATooLongDatagramIsFlaggedTruncated) {
  Result<EventSocket> sock = EventSocket::Bind(path_);
  ASSERT_TRUE(sock) << sock.error().message;
  // The sender's buffer must hold the datagram; one past the limit.
  UniqueFd s(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  const int big = 1 << 20;
  ::setsockopt(s.get(), SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path_.c_str(), path_.size());
  for (size_t size : {kMaxEventBytes + 1, kMaxEventBytes + 1000}) {
    const std::string text(size, 'x');
    ASSERT_EQ(::sendto(s.get(), text.data(), text.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
              static_cast<ssize_t>(size)) << std::strerror(errno);
    std::optional<ReceivedDatagram> got = sock.value().Receive();
    ASSERT_TRUE(got.has_value());
    EXPECT_TRUE(got->truncated) << size;
    EXPECT_TRUE(got->bytes.empty());
  }
  const std::string exact(kMaxEventBytes, 'y');
  ASSERT_EQ(::sendto(s.get(), exact.data(), exact.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
            static_cast<ssize_t>(exact.size()));
  std::optional<ReceivedDatagram> got = sock.value().Receive();
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->truncated);
  EXPECT_EQ(got->bytes, exact);
  EXPECT_EQ(sock.value().counters().truncated, 2u);
}

TEST_F(EventSocketTest, ReplacesAStaleSocketButNotALiveOne) {
  {
    Result<EventSocket> first = EventSocket::Bind(path_);
    ASSERT_TRUE(first) << first.error().message;
    Result<EventSocket> second = EventSocket::Bind(path_);
    ASSERT_FALSE(second);
    EXPECT_NE(second.error().message.find("another process is bound"), std::string::npos) << second.error().message;
  }
  // The first one is closed; its file is stale now.
  Result<EventSocket> again = EventSocket::Bind(path_);
  ASSERT_TRUE(again) << again.error().message;
  ASSERT_TRUE(SendDatagram(path_, "{}"));
  EXPECT_TRUE(again.value().Receive().has_value());
}

TEST_F(EventSocketTest, RefusesToRemoveWhatIsNotASocket) {
  const std::string target = dir_.path() + "/precious";
  std::ofstream(target) << "keep me";
  const std::string link = dir_.path() + "/link.sock";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  Result<EventSocket> viaLink = EventSocket::Bind(link);
  ASSERT_FALSE(viaLink);
  EXPECT_NE(viaLink.error().message.find("is a symlink; refusing"), std::string::npos) << viaLink.error().message;

  Result<EventSocket> overFile = EventSocket::Bind(target);
  ASSERT_FALSE(overFile);
  EXPECT_NE(overFile.error().message.find("is a regular file"), std::string::npos) << overFile.error().message;

  const std::string sub = dir_.path() + "/sub";
  ASSERT_EQ(::mkdir(sub.c_str(), 0700), 0);
  EXPECT_FALSE(EventSocket::Bind(sub));

  std::ifstream in(target);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep me");

  EXPECT_FALSE(EventSocket::Bind("relative.sock"));
  EXPECT_FALSE(EventSocket::Bind("/" + std::string(200, 'a')));
}

TEST_F(EventSocketTest, SendDatagramNeverWaits) {
  Status none = SendDatagram(path_, "{}");
  ASSERT_FALSE(none);  // nobody there
  EXPECT_NE(none.error().message.find(path_), std::string::npos);
  Result<EventSocket> sock = EventSocket::Bind(path_);
  ASSERT_TRUE(sock) << sock.error().message;
  // Fill the queue without receiving: a send must fail, not block.
  bool failed = false;
  for (int i = 0; i < 100000 && !failed; ++i) failed = !SendDatagram(path_, std::string(1000, 'z'));
  EXPECT_TRUE(failed);
}

// --- StampEvent ---

rapidjson::Document Parse(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str(), text.size());
  EXPECT_FALSE(d.HasParseError()) << text;
  return d;
}

const char kGood[] = R"({"id":"1234.0:7","event":"ready","step":"1234.0","time":1714000000.25,"extra":{"a":[1,2,{"b":null}]}})";

TEST(StampEvent, AddsTheKernelsSenderAndTheNode) {
  Result<std::string> out = StampEvent(kGood, 4242, 1001, 1002, "gpu-node-7");
  ASSERT_TRUE(out) << out.error().message;
  rapidjson::Document d = Parse(out.value());
  EXPECT_STREQ(d["id"].GetString(), "1234.0:7");
  EXPECT_STREQ(d["event"].GetString(), "ready");
  EXPECT_DOUBLE_EQ(d["time"].GetDouble(), 1714000000.25);
  EXPECT_EQ(d["sender"]["pid"].GetInt(), 4242);
  EXPECT_EQ(d["sender"]["uid"].GetInt(), 1001);
  EXPECT_EQ(d["sender"]["gid"].GetInt(), 1002);
  EXPECT_STREQ(d["node"].GetString(), "gpu-node-7");
  EXPECT_EQ(d["extra"]["a"][2]["b"].IsNull(), true);
  EXPECT_EQ(out.value().find('\n'), std::string::npos);
  EXPECT_EQ(out.value().find(' '), std::string::npos);  // compact
}

TEST(StampEvent, AClaimedSenderOrNodeIsReplaced) {
  const std::string claimed =
      R"({"sender":{"pid":1,"uid":0,"gid":0,"x":[{"uid":0}]},"node":"login","id":"1.0:1","event":"started","step":"1.0","time":1})";
  Result<std::string> out = StampEvent(claimed, 77, 1001, 1001, "n1");
  ASSERT_TRUE(out) << out.error().message;
  rapidjson::Document d = Parse(out.value());
  EXPECT_EQ(d["sender"]["pid"].GetInt(), 77);
  EXPECT_EQ(d["sender"]["uid"].GetInt(), 1001);
  EXPECT_FALSE(d["sender"].HasMember("x"));
  EXPECT_STREQ(d["node"].GetString(), "n1");
  EXPECT_EQ(d.MemberCount(), 6u);  // id event step time sender node: no second copy
  EXPECT_EQ(out.value().find("login"), std::string::npos);

  Result<std::string> scalar = StampEvent(R"({"node":7,"sender":"me","id":"1.0:1","event":"started","step":"1.0","time":1})", 5, 6, 7, "n1");
  ASSERT_TRUE(scalar) << scalar.error().message;
  EXPECT_STREQ(Parse(scalar.value())["node"].GetString(), "n1");
}

TEST(StampEvent, OptionalSweepAndEntryAreChecked) {
  auto with = [](const std::string& more) {
    return StampEvent(R"({"id":"1.0:1","event":"result","step":"1.0","time":1)" + more + "}", 1, 2, 3, "n");
  };
  EXPECT_TRUE(with(R"(,"sweep":"sw-1.a_b","entry":0)"));
  EXPECT_TRUE(with(R"(,"entry":9223372036854775807)"));
  struct Case {
    std::string more;
    std::string field;
  };
  for (const Case& c : std::vector<Case>{{R"(,"sweep":"..")", "sweep"},
                                         {R"(,"sweep":"a/b")", "sweep"},
                                         {R"(,"sweep":"")", "sweep"},
                                         {R"(,"sweep":7)", "sweep"},
                                         {R"(,"entry":-1)", "entry"},
                                         {R"(,"entry":1.5)", "entry"},
                                         {R"(,"entry":"3")", "entry"},
                                         {R"(,"entry":18446744073709551615)", "entry"}}) {
    Result<std::string> out = with(c.more);
    ASSERT_FALSE(out) << c.more;
    EXPECT_NE(out.error().message.find("field '" + c.field + "'"), std::string::npos) << out.error().message;
  }
}

TEST(StampEvent, RequiredFieldsAndTheirTypesAreNamedInErrors) {
  struct Case {
    std::string text;
    std::string says;
  };
  const std::vector<Case> cases = {
      {R"({"event":"ready","step":"1.0","time":1})", "field 'id': missing"},
      {R"({"id":"1.0:1","step":"1.0","time":1})", "field 'event': missing"},
      {R"({"id":"1.0:1","event":"ready","time":1})", "field 'step': missing"},
      {R"({"id":"1.0:1","event":"ready","step":"1.0"})", "field 'time': missing"},
      {R"({"id":"1.0","event":"ready","step":"1.0","time":1})", "field 'id'"},
      {R"({"id":"1.0:x","event":"ready","step":"1.0","time":1})", "field 'id'"},
      {R"({"id":":1","event":"ready","step":"1.0","time":1})", "field 'id'"},
      {R"({"id":"a:b:1","event":"ready","step":"1.0","time":1})", "field 'id'"},
      {R"({"id":5,"event":"ready","step":"1.0","time":1})", "field 'id'"},
      {R"({"id":"1.0:1","event":"Ready","step":"1.0","time":1})", "field 'event'"},
      {R"({"id":"1.0:1","event":"","step":"1.0","time":1})", "field 'event'"},
      {R"({"id":"1.0:1","event":"ready","step":"","time":1})", "field 'step'"},
      {R"({"id":"1.0:1","event":"ready","step":{"a":1},"time":1})", "field 'step'"},
      {R"({"id":"1.0:1","event":"ready","step":"1.0","time":"now"})", "field 'time'"},
      {R"({"id":"1.0:1","event":"ready","step":"1.0","time":[1]})", "field 'time'"},
      {R"({"id":"1.0:1","id":"1.0:2","event":"ready","step":"1.0","time":1})", "field \"id\" appears more than once"},
      {R"([1,2])", "must be a JSON object"},
      {R"("text")", "must be a JSON object"},
      {R"(42)", "must be a JSON object"},
      {R"({"id":"1.0:1",)", "not JSON"},
      {R"({"id":"1.0:1","event":"ready","step":"1.0","time":1} trailing)", "not JSON"},
      {"", "not JSON"},
      {std::string("{\"id\":\"1.0:1\"}\0junk", 19), "NUL"},
      {R"({"id":"1.0:1","event":"ready","step":"1.0","time":1e999})", "not JSON"},
      {"{\"id\":\"1.0:1\",\"event\":\"ready\",\"step\":\"\xff\",\"time\":1}", "not JSON"},
      {R"({"id":"1.0:1","event":"ready","step":"1.0","time":1,"x":"\udc00"})", "field 'x': holds a string that is not UTF-8"},
  };
  for (const Case& c : cases) {
    Result<std::string> out = StampEvent(c.text, 1, 2, 3, "n");
    ASSERT_FALSE(out) << c.text;
    EXPECT_NE(out.error().message.find(c.says), std::string::npos) << c.text << " -> " << out.error().message;
  }
  EXPECT_FALSE(StampEvent(kGood, 1, 2, 3, ""));
}

TEST(StampEvent, DeepNestingAndTheSizeLimitAreRefused) {
  std::string deep = R"({"id":"1.0:1","event":"ready","step":"1.0","time":1,"x":)";
  deep += std::string(30000, '[') + std::string(30000, ']') + "}";
  Result<std::string> out = StampEvent(deep, 1, 2, 3, "n");
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("nests objects and arrays deeper than 32 levels"), std::string::npos)
      << out.error().message;

  std::string justUnder = R"({"id":"1.0:1","event":"ready","step":"1.0","time":1,"x":")";
  justUnder += std::string(kMaxEventBytes - justUnder.size() - 2, 'a') + "\"}";
  ASSERT_EQ(justUnder.size(), kMaxEventBytes);
  Result<std::string> big = StampEvent(justUnder, 1, 2, 3, "n");
  ASSERT_FALSE(big);  // the sender and node push it over
  EXPECT_NE(big.error().message.find("at most 65536"), std::string::npos) << big.error().message;
}

TEST(StampEvent, NumbersStayAsSentAndStampingAgainChangesNothing) {
  // Each would change by an ulp if it were read and printed again
  // (fuzz/agent_event_fuzz).
  const std::string sent =
      R"({"id":"1.0:1","event":"ready","step":"1.0","time":1.7646917979999998e84,"x":[-218446744073709571615,1E2]})";
  Result<std::string> out = StampEvent(sent, 1, 2, 3, "n");
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out.value().rfind(sent.substr(0, sent.size() - 1) + ",\"sender\":", 0), 0u) << out.value();
  Result<std::string> again = StampEvent(out.value(), 1, 2, 3, "n");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again.value(), out.value());
  Result<std::string> huge = StampEvent(R"({"id":"1.0:1","event":"ready","step":"1.0","time":1,"x":1.8e308})", 1, 2, 3, "n");
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("field 'x': holds a number beyond the range of a double"), std::string::npos)
      << huge.error().message;
}

TEST(StampEvent, AnyBytesAreSafe) {
  std::mt19937 rng(12345);
  const std::string alphabet = "{}[]\":,0123456789.eE+-tfnul\\ \x01\xff\xc3\xa9" "abc";
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const size_t len = rng() % 64;
    for (size_t j = 0; j < len; ++j) text += alphabet[rng() % alphabet.size()];
    if (i % 3 == 0) text = std::string(kGood).substr(0, rng() % sizeof kGood) + text;
    Result<std::string> out = StampEvent(text, 1, 2, 3, "n");
    if (out) Parse(out.value());  // whatever passes is JSON again
  }
}

}  // namespace
}  // namespace ix
