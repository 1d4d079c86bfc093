#include "core/process/event_sink.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstring>

namespace ix {

std::string EventJson(const std::string& event, const std::string& step, double unix_time,
                      const std::vector<std::pair<std::string, std::string>>& fields,
                      const std::vector<std::pair<std::string, std::string>>& raw) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  auto str = [&](const std::string& s) { w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size())); };
  w.StartObject();
  w.Key("event"); str(event);
  w.Key("step"); str(step);
  w.Key("time");
  // The writer writes nothing for NaN or infinity (the text would not be JSON).
  if (std::isfinite(unix_time)) {
    w.Double(unix_time);
  } else {
    w.Null();
  }
  for (const auto& [k, v] : fields) {
    str(k);
    str(v);
  }
  for (const auto& [k, v] : raw) {
    str(k);
    w.RawValue(v.c_str(), v.size(), rapidjson::kObjectType);
  }
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

EventSink::EventSink(std::string socket_path) : EventSink(-1, std::move(socket_path)) {}

EventSink::EventSink(int connected_fd, std::string socket_path)
    : path_(std::move(socket_path)), connected_fd_(connected_fd) {
  if (path_.empty()) return;
  if (path_.size() >= sizeof(sockaddr_un{}.sun_path)) {
    last_error_ = "agent socket path is too long: " + path_;
    return;  // no fd_: each event is counted as dropped
  }
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) last_error_ = std::string("socket: ") + std::strerror(errno);
}

EventSink::~EventSink() {
  if (fd_ >= 0) ::close(fd_);
  if (connected_fd_ >= 0) ::close(connected_fd_);
}

void EventSink::SetEntry(std::string sweep, int64_t entry) {
  sweep_ = std::move(sweep);
  entry_ = entry;
}

ssize_t SendDatagramOn(int fd, const std::string* path, std::string_view bytes, int pass_fd) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path) std::memcpy(addr.sun_path, path->c_str(), std::min(path->size(), sizeof addr.sun_path - 1));
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (path) {
    msg.msg_name = &addr;
    msg.msg_namelen = sizeof addr;
  }
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (pass_fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
  }
  ssize_t n;
  do {
    n = ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n;
}

// One datagram, never blocking; with `pass_fd` as SCM_RIGHTS.
bool EventSink::SendOn(int fd, bool to_path, const std::string& text, int pass_fd) {
  const ssize_t n = SendDatagramOn(fd, to_path ? &path_ : nullptr, text, pass_fd);
  if (n == static_cast<ssize_t>(text.size())) return true;
  last_error_ = (to_path ? path_ : std::string("the agent's socket")) + ": " + std::strerror(errno);
  return false;
}

bool EventSink::Send(const std::string& event, const std::string& step,
                     const std::vector<std::pair<std::string, std::string>>& fields,
                     const std::vector<std::pair<std::string, std::string>>& raw, int pass_fd) {
  if (!enabled()) return false;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::vector<std::pair<std::string, std::string>> f = {{"id", step + ":" + std::to_string(++seq_)}};
  if (!sweep_.empty()) f.emplace_back("sweep", sweep_);
  f.insert(f.end(), fields.begin(), fields.end());
  std::vector<std::pair<std::string, std::string>> r;
  if (entry_ >= 0) r.emplace_back("entry", std::to_string(entry_));
  r.insert(r.end(), raw.begin(), raw.end());
  const std::string text = EventJson(event, step, now, f, r);
  const bool ok = (connected_fd_ >= 0 && SendOn(connected_fd_, false, text, pass_fd)) ||
                  (fd_ >= 0 && SendOn(fd_, true, text, pass_fd));
  ++(ok ? sent_ : dropped_);
  return ok;
}

}  // namespace ix
