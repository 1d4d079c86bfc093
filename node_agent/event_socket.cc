#include "node_agent/event_socket.h"

#include <fcntl.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
// After reader.h: RapidJSON's stack.h is then named rapidjson/internal/stack.h
// (not rapidjson/error/../internal/stack.h), the name tests/ubsan.supp
// matches.
#include <rapidjson/error/en.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/process/event_sink.h"

namespace ix {
namespace {

// Room for the credentials and a few descriptors: a sender passing more
// than one is refused anyway, and what does not fit the kernel closes
// (MSG_CTRUNC), so the exact size only decides what is flagged.
constexpr size_t kMaxPassedFds = 8;

std::string Errno(int e) { return std::strerror(e); }

Result<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return Error{"socket path '" + path + "': must be 1 to " + std::to_string(sizeof addr.sun_path - 1) + " bytes"};
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

// Whether a process is bound to the socket file at `addr` (connect works).
bool SocketIsLive(const sockaddr_un& addr) {
  UniqueFd probe(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe.valid()) return false;
  return ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
}

// Removes what is at `path` if it is a stale socket; nothing there is fine.
Status RemoveStaleSocket(const std::string& path, const sockaddr_un& addr) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Ok{};
    return Error{"event socket " + path + ": " + Errno(errno)};
  }
  if (!S_ISSOCK(st.st_mode)) {
    const char* what = S_ISLNK(st.st_mode) ? "a symlink" : S_ISDIR(st.st_mode) ? "a directory"
                       : S_ISREG(st.st_mode) ? "a regular file" : "not a socket";
    return Error{"event socket " + path + ": exists and is " + what +
                 "; refusing to remove it (only a stale socket is replaced)"};
  }
  if (SocketIsLive(addr)) {
    return Error{"event socket " + path + ": another process is bound to it (is another ix-node-agent running?)"};
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Error{"event socket " + path + ": cannot remove the stale socket: " + Errno(errno)};
  }
  return Ok{};
}

// SO_RCVBUFFORCE (CAP_NET_ADMIN) else SO_RCVBUF; the size granted.
int SetReceiveBuffer(int fd, int bytes) {
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0) {
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  }
  int granted = 0;
  socklen_t len = sizeof granted;
  if (::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &granted, &len) != 0) return 0;
  return granted;
}

}  // namespace

Result<EventSocket> EventSocket::Bind(const std::string& path, int rcvbuf_bytes) {
  if (path.empty() || path[0] != '/') return Error{"event socket '" + path + "': must be an absolute path"};
  Result<sockaddr_un> addr = UnixAddress(path);
  if (!addr) return Error{"event " + addr.error().message};
  if (Status removed = RemoveStaleSocket(path, addr.value()); !removed) return removed.error();
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Error{"event socket " + path + ": socket: " + Errno(errno)};
  const int one = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof one) != 0) {
    return Error{"event socket " + path + ": SO_PASSCRED: " + Errno(errno)};
  }
  const int granted = SetReceiveBuffer(fd.get(), rcvbuf_bytes);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr.value()), sizeof addr.value()) != 0) {
    return Error{"event socket " + path + ": bind: " + Errno(errno)};
  }
  // bind made the file with the umask's mode; job users must be able to
  // send (connect/sendto need write permission on the socket file). The
  // directory is root's, so nothing can have swapped the file meanwhile.
  if (::chmod(path.c_str(), 0666) != 0) {
    const int e = errno;
    ::unlink(path.c_str());
    return Error{"event socket " + path + ": chmod 0666: " + Errno(e)};
  }
  return EventSocket(std::move(fd), path, granted);
}

namespace {

// Reads the control messages of `msg` into `out`; closes every descriptor
// unless exactly one came (and the control data was whole).
void TakeControl(msghdr& msg, ReceivedDatagram& out) {
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET) continue;
    if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
      ucred cred{};
      std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
      out.has_credentials = true;
      out.pid = cred.pid;
      out.uid = cred.uid;
      out.gid = cred.gid;
    } else if (c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(0)) {
      const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.push_back(fd);
      }
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) || fds.size() > 1) out.bad_descriptors = true;
  if (out.bad_descriptors || out.truncated) {
    for (int fd : fds) ::close(fd);
  } else if (fds.size() == 1) {
    out.fd.reset(fds[0]);
  }
}

}  // namespace

std::optional<ReceivedDatagram> EventSocket::Receive() {
  buffer_.resize(kMaxEventBytes + 1);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(kMaxPassedFds * sizeof(int))];
  for (;;) {
    iovec iov{buffer_.data(), buffer_.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        ++counters_.errors;
        last_error_ = "event socket " + path_ + ": recvmsg: " + Errno(errno);
      }
      return std::nullopt;
    }
    ReceivedDatagram out;
    out.truncated = (msg.msg_flags & MSG_TRUNC) || static_cast<size_t>(n) > kMaxEventBytes;
    TakeControl(msg, out);
    if (!out.truncated && !out.bad_descriptors) out.bytes.assign(buffer_.data(), static_cast<size_t>(n));
    ++counters_.received;
    if (out.truncated) ++counters_.truncated;
    if (out.bad_descriptors) ++counters_.bad_descriptors;
    return out;
  }
}

Status SendDatagram(const std::string& socket_path, std::string_view bytes, int fd_to_pass) {
  Result<sockaddr_un> addr = UnixAddress(socket_path);
  if (!addr) return addr.error();
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Error{"socket: " + Errno(errno)};
  const ssize_t n = SendDatagramOn(fd.get(), &socket_path, bytes, fd_to_pass);
  if (n < 0) return Error{"send to " + socket_path + ": " + Errno(errno)};
  if (static_cast<size_t>(n) != bytes.size()) return Error{"send to " + socket_path + ": datagram cut"};
  return Ok{};
}

// --- StampEvent ---

namespace {

// A SAX handler that copies the event to `w` as it is read, leaving out a
// claimed `sender` and `node` (at any depth of their values) and the root
// object open for the caller to append the real ones to. The checks are
// not its own: a CheckedEventHandler in front of it shows every call to the
// protocol's EventChecker first.
class Stamper {
 public:
  using Ch = char;
  explicit Stamper(EventWriter& w) : w_(w) {}

  bool Null() { return Scalar([&] { return w_.Null(); }); }
  bool Bool(bool b) { return Scalar([&] { return w_.Bool(b); }); }
  bool Int(int i) { return Scalar([&] { return w_.Int(i); }); }
  bool Uint(unsigned u) { return Scalar([&] { return w_.Uint(u); }); }
  bool Int64(int64_t i) { return Scalar([&] { return w_.Int64(i); }); }
  bool Uint64(uint64_t u) { return Scalar([&] { return w_.Uint64(u); }); }
  bool Double(double d) { return Scalar([&] { return w_.Double(d); }); }
  bool RawNumber(const Ch* s, rapidjson::SizeType n, bool copy) {
    return Scalar([&] { return w_.RawNumber(s, n, copy); });  // as it came (kEventParseFlags)
  }
  bool String(const Ch* s, rapidjson::SizeType n, bool) { return Scalar([&] { return w_.String(s, n); }); }
  bool StartObject() { return Open([&] { return w_.StartObject(); }); }
  bool StartArray() { return Open([&] { return w_.StartArray(); }); }
  bool Key(const Ch* s, rapidjson::SizeType n, bool) {
    if (skip_ > 0) return true;
    const std::string_view key(s, n);
    if (depth_ == 1 && (key == "sender" || key == "node")) {
      skip_next_ = true;  // the kernel's word and ours replace them
      return true;
    }
    return w_.Key(s, n);
  }
  bool EndObject(rapidjson::SizeType) { return Close(true); }
  bool EndArray(rapidjson::SizeType) { return Close(false); }

 private:
  template <class F>
  bool Scalar(F write) {
    if (skip_next_) {
      skip_next_ = false;
      return true;
    }
    return skip_ > 0 || write();
  }
  template <class F>
  bool Open(F write) {
    ++depth_;
    if (skip_next_) {
      skip_next_ = false;
      skip_ = depth_;
      return true;
    }
    return skip_ > 0 || write();
  }
  bool Close(bool object) {
    const int closing = depth_--;
    if (skip_ > 0) {
      if (closing == skip_) skip_ = 0;
      return true;
    }
    if (closing == 1) return true;  // the root stays open for sender and node
    return object ? w_.EndObject() : w_.EndArray();
  }

  EventWriter& w_;
  int depth_ = 0;
  int skip_ = 0;            // > 0: inside a skipped value opened at this depth
  bool skip_next_ = false;  // the next value is a claimed sender or node
};

// "event: field 'id': must be ..., got a string \"1.0\"", or the whole
// event's problem.
std::string ProblemMessage(const EventProblem& p) {
  if (p.field.empty()) return "event: " + p.rule;
  return "event: field '" + p.field + "': " + p.rule + (p.got.empty() ? "" : ", got " + p.got);
}

void AppendSenderAndNode(EventWriter& w, pid_t pid, uid_t uid, gid_t gid,
                         const std::string& hostname) {
  w.Key("sender");
  w.StartObject();
  w.Key("pid");
  w.Int64(pid);
  w.Key("uid");
  w.Uint64(uid);
  w.Key("gid");
  w.Uint64(gid);
  w.EndObject();
  w.Key("node");
  w.String(hostname.data(), static_cast<rapidjson::SizeType>(hostname.size()));
  w.EndObject();
}

}  // namespace

Result<std::string> StampEvent(std::string_view datagram, pid_t pid, uid_t uid, gid_t gid,
                               const std::string& hostname) {
  if (hostname.empty() || hostname.size() > kMaxNodeBytes) {
    return Error{"event: the node name must be 1 to " + std::to_string(kMaxNodeBytes) + " bytes"};
  }
  // JSON text has no raw NUL, and RapidJSON's reader would take one for the
  // end of the input.
  if (datagram.find('\0') != std::string_view::npos) return Error{"event: not JSON: a NUL byte"};
  rapidjson::StringBuffer buf;
  EventWriter w(buf);
  Stamper stamper(w);
  EventChecker checker(EventStage::kDatagram);
  CheckedEventHandler<Stamper> handler(checker, stamper);
  rapidjson::MemoryStream stream(datagram.data(), datagram.size());
  rapidjson::Reader reader;
  const rapidjson::ParseResult parsed = reader.Parse<kEventParseFlags>(stream, handler);
  if (!parsed) {
    if (!checker.problem().rule.empty()) return Error{ProblemMessage(checker.problem())};
    return Error{std::string("event: not JSON: ") + rapidjson::GetParseError_En(parsed.Code()) + " (at byte " +
                 std::to_string(parsed.Offset()) + ")"};
  }
  AppendSenderAndNode(w, pid, uid, gid, hostname);
  if (Status ok = CheckEventSize(buf.GetSize()); !ok) {
    return Error{"event: with sender and node, it " + ok.error().message};
  }
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace ix
