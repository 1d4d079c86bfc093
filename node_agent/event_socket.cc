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
#include <cstdio>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

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
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_name = &addr.value();
  msg.msg_namelen = sizeof addr.value();
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd_to_pass >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd_to_pass, sizeof(int));
  }
  ssize_t n;
  do {
    n = ::sendmsg(fd.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Error{"send to " + socket_path + ": " + Errno(errno)};
  if (static_cast<size_t>(n) != bytes.size()) return Error{"send to " + socket_path + ": datagram cut"};
  return Ok{};
}

// --- the protocol's names and StampEvent ---

namespace {

bool IsNameOf(std::string_view s, size_t max) {
  if (s.empty() || s.size() > max || s == "." || s == "..") return false;
  for (char c : s) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool IsValidSweepId(std::string_view s) { return IsNameOf(s, 64); }
bool IsValidResultName(std::string_view s) { return IsNameOf(s, 255); }

namespace {

constexpr int kMaxDepth = 32;

bool IsEventId(std::string_view s) {
  if (s.empty() || s.size() > 200) return false;
  const size_t colon = s.find(':');
  if (colon == 0 || colon == std::string_view::npos || colon + 1 == s.size()) return false;
  for (char c : s.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsEventName(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  }
  return true;
}

// What kind of JSON value a SAX event is, for checking the top-level fields.
enum class Kind { kNull, kBool, kInteger, kNegative, kNumber, kString, kContainer };

// `s` cut to 40 bytes, with control and non-ASCII bytes as \xNN, for errors.
std::string Printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (s.size() > 40) out += "...";
  return out;
}

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kBool: return "a boolean";
    case Kind::kInteger: return "an integer";
    case Kind::kNegative: return "a negative integer";
    case Kind::kNumber: return "a number";
    case Kind::kString: return "a string";
    case Kind::kContainer: return "an object or array";
  }
  return "?";
}

// Whether a top-level field `key` may have this value; "" when it may (or
// the field is free), else what is allowed.
std::string FieldProblem(const std::string& key, Kind kind, std::string_view text) {
  const bool str = kind == Kind::kString;
  if (key == "id" && !(str && IsEventId(text))) return "expected a string \"STEP:SEQ\" of 1 to 200 bytes (STEP without ':', SEQ decimal digits)";
  if (key == "event" && !(str && IsEventName(text))) return "expected a string of 1 to 32 characters from a-z and _";
  if (key == "step" && !(str && !text.empty() && text.size() <= 64)) return "expected a string of 1 to 64 bytes";
  if (key == "time" && !(kind == Kind::kInteger || kind == Kind::kNegative || kind == Kind::kNumber)) return "expected a number (seconds since the epoch)";
  if (key == "sweep" && !(str && IsValidSweepId(text))) return "expected a string of 1 to 64 characters from A-Za-z0-9._- (not . or ..)";
  if (key == "entry" && kind != Kind::kInteger) return "expected a non-negative integer";
  return "";
}

// A SAX handler that copies the event to `w` as it is read, checks the
// top-level fields on the way, and leaves out a claimed `sender` and
// `node`. With iterative parsing and the depth limit, no input can exhaust
// the stack. The root object is left open for the caller to append to.
class Stamper {
 public:
  using Ch = char;
  explicit Stamper(rapidjson::Writer<rapidjson::StringBuffer>& w) : w_(w) {}

  std::string error;  // set when a handler refused the event

  bool Null() { return Scalar(Kind::kNull, "", [&] { return w_.Null(); }); }
  bool Bool(bool b) { return Scalar(Kind::kBool, "", [&] { return w_.Bool(b); }); }
  bool Int(int i) { return Scalar(i < 0 ? Kind::kNegative : Kind::kInteger, "", [&] { return w_.Int(i); }); }
  bool Uint(unsigned u) { return Scalar(Kind::kInteger, "", [&] { return w_.Uint(u); }); }
  bool Int64(int64_t i) { return Scalar(i < 0 ? Kind::kNegative : Kind::kInteger, "", [&] { return w_.Int64(i); }); }
  // Above INT64_MAX is no integer a database column holds.
  bool Uint64(uint64_t u) {
    const Kind kind = u > static_cast<uint64_t>(INT64_MAX) ? Kind::kNumber : Kind::kInteger;
    return Scalar(kind, "", [&] { return w_.Uint64(u); });
  }
  bool Double(double d) { return Scalar(Kind::kNumber, "", [&] { return w_.Double(d); }); }
  bool RawNumber(const Ch*, rapidjson::SizeType, bool) { return Fail("raw numbers are not parsed"); }
  bool String(const Ch* s, rapidjson::SizeType n, bool) {
    return Scalar(Kind::kString, std::string_view(s, n), [&] { return w_.String(s, n); });
  }
  bool StartObject() { return Open(true, [&] { return w_.StartObject(); }); }
  bool StartArray() { return Open(false, [&] { return w_.StartArray(); }); }
  bool Key(const Ch* s, rapidjson::SizeType n, bool) {
    if (skip_ > 0) return true;
    if (depth_ > 1) return w_.Key(s, n);
    key_.assign(s, n);
    if (!seen_.insert(key_).second) return Fail("key '" + Printable(key_) + "' is given twice");
    if (key_ == "sender" || key_ == "node") {
      skip_next_ = true;  // the kernel's word and ours replace them
      return true;
    }
    return w_.Key(s, n);
  }
  bool EndObject(rapidjson::SizeType) { return Close(true); }
  bool EndArray(rapidjson::SizeType) { return Close(false); }

  bool seen(const std::string& key) const { return seen_.count(key) != 0; }

 private:
  template <class F>
  bool Scalar(Kind kind, std::string_view text, F write) {
    if (depth_ == 0) return Fail("the event must be a JSON object");
    if (skip_next_) {
      skip_next_ = false;
      return true;
    }
    if (skip_ > 0) return true;
    if (depth_ == 1 && !Check(kind, text)) return false;
    return write();
  }
  template <class F>
  bool Open(bool object, F write) {
    if (depth_ == 0 && !object) return Fail("the event must be a JSON object");
    if (++depth_ > kMaxDepth) return Fail("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (skip_next_) {
      skip_next_ = false;
      skip_ = depth_;
      return true;
    }
    if (skip_ > 0) return true;
    if (depth_ == 2 && !Check(Kind::kContainer, "")) return false;
    return write();
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
  bool Check(Kind kind, std::string_view text) {
    const std::string problem = FieldProblem(key_, kind, text);
    if (problem.empty()) return true;
    std::string got = KindName(kind);
    if (kind == Kind::kString) got += " \"" + Printable(text) + "\"";
    return Fail("field '" + key_ + "': " + problem + ", got " + got);
  }
  bool Fail(std::string why) {
    error = std::move(why);
    return false;
  }

  rapidjson::Writer<rapidjson::StringBuffer>& w_;
  int depth_ = 0;
  int skip_ = 0;            // > 0: inside a skipped value opened at this depth
  bool skip_next_ = false;  // the next value is a claimed sender or node
  std::string key_;         // the current top-level key
  std::set<std::string> seen_;
};

}  // namespace

Result<std::string> StampEvent(std::string_view datagram, pid_t pid, uid_t uid, gid_t gid,
                               const std::string& hostname) {
  if (hostname.empty() || hostname.size() > 255) return Error{"event: the node name must be 1 to 255 bytes"};
  // JSON text has no raw NUL, and RapidJSON's reader would take one for the
  // end of the input.
  if (datagram.find('\0') != std::string_view::npos) return Error{"event: not JSON: a NUL byte"};
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  Stamper stamper(w);
  rapidjson::MemoryStream stream(datagram.data(), datagram.size());
  rapidjson::Reader reader;
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;
  const rapidjson::ParseResult parsed = reader.Parse<kFlags>(stream, stamper);
  if (!parsed) {
    if (!stamper.error.empty()) return Error{"event: " + stamper.error};
    return Error{std::string("event: not JSON: ") + rapidjson::GetParseError_En(parsed.Code()) + " (at byte " +
                 std::to_string(parsed.Offset()) + ")"};
  }
  for (const char* key : {"id", "event", "step", "time"}) {
    if (!stamper.seen(key)) return Error{std::string("event: field '") + key + "': missing; every event has id, event, step and time"};
  }
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
  if (buf.GetSize() > kMaxEventBytes) {
    return Error{"event: " + std::to_string(buf.GetSize()) + " bytes with sender and node; at most " +
                 std::to_string(kMaxEventBytes) + " allowed"};
  }
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace ix
