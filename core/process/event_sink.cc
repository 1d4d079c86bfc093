#include "core/process/event_sink.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

EventSink::EventSink(std::string socket_path) : path_(std::move(socket_path)) {
  if (path_.empty()) return;
  if (path_.size() >= sizeof(sockaddr_un{}.sun_path)) {
    last_error_ = "agent socket path is too long: " + path_;
    return;
  }
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) last_error_ = std::string("socket: ") + std::strerror(errno);
}

EventSink::~EventSink() {
  if (fd_ >= 0) ::close(fd_);
}

void EventSink::Send(const std::string& event, const std::string& step,
                     const std::vector<std::pair<std::string, std::string>>& fields,
                     const std::vector<std::pair<std::string, std::string>>& raw) {
  if (path_.empty()) return;
  if (fd_ < 0) {
    ++dropped_;
    return;
  }
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string text = EventJson(event, step, now, fields, raw);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path_.c_str(), path_.size());
  const ssize_t n = ::sendto(fd_, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                             reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  if (n == static_cast<ssize_t>(text.size())) {
    ++sent_;
  } else {
    ++dropped_;
    last_error_ = path_ + ": " + std::strerror(errno);
  }
}

}  // namespace ix
