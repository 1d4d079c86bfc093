#include "vllm_link.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "fake_common.h"

namespace ixfake::vllm {
namespace {

// The addresses of host:port for a stream socket; nullptr with `error` set.
struct addrinfo* resolve(const std::string& host, int port, bool passive, std::string& error) {
  struct addrinfo hints {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  struct addrinfo* res = nullptr;
  std::string port_text = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res);
  if (rc != 0) {
    error = std::string("cannot resolve ") + host + ": " + gai_strerror(rc);
    return nullptr;
  }
  return res;
}

// Milliseconds from now to deadline_s for poll(); -1 for none.
int poll_ms(double deadline_s) {
  if (deadline_s < 0) return -1;
  double ms = std::ceil((deadline_s - now_s()) * 1000.0);
  return static_cast<int>(std::clamp(ms, 0.0, 3600000.0));
}

// Waits for a non-blocking connect on fd; 0, or the errno it failed with.
int finish_connect(int fd, double timeout_s) {
  struct pollfd p {fd, POLLOUT, 0};
  int rc = ::poll(&p, 1, poll_ms(now_s() + timeout_s));
  if (rc == 0) return ETIMEDOUT;
  if (rc < 0) return errno;
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  return err;
}

// "host:port" of one end of fd.
std::string address_name(int fd, bool peer) {
  struct sockaddr_storage ss {};
  socklen_t len = sizeof ss;
  auto* sa = reinterpret_cast<struct sockaddr*>(&ss);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<struct sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    return strprintf("%s:%d", host, ntohs(in->sin_port));
  }
  auto* in6 = reinterpret_cast<struct sockaddr_in6*>(&ss);
  ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
  return strprintf("[%s]:%d", host, ntohs(in6->sin6_port));
}

}  // namespace

int listen_tcp(const std::string& host, int port, std::string& error) {
  struct addrinfo* res = resolve(host, port, true, error);
  if (res == nullptr) return -1;
  int fd = -1;
  for (auto* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  return fd;
}

int connect_tcp(const std::string& host, int port, double timeout_s, std::string& error) {
  struct addrinfo* res = resolve(host, port, false, error);
  if (res == nullptr) return -1;
  int fd = -1;
  for (auto* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    int err = ::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) err = finish_connect(fd, timeout_s);
    if (err != 0) {
      error = std::strerror(err);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  return fd;
}

std::string peer_name(int fd) { return address_name(fd, true); }

std::string local_name(int fd) { return address_name(fd, false); }

LineSocket::~LineSocket() {
  if (fd_ >= 0) ::close(fd_);
}

bool LineSocket::send_line(std::string_view line) {
  std::string data(line.substr(0, kMaxLineBytes - 1));
  std::replace(data.begin(), data.end(), '\n', ' ');
  data += '\n';
  std::lock_guard<std::mutex> lock(send_mutex_);
  std::size_t off = 0;
  while (off < data.size()) {
    struct pollfd p {fd_, POLLOUT, 0};
    if (::poll(&p, 1, 1000) <= 0) return false;
    ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

LineSocket::Read LineSocket::read_line(std::string& line, double deadline_s, std::string& error) {
  for (;;) {
    if (std::size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return Read::kLine;
    }
    if (buffer_.size() >= kMaxLineBytes) return Read::kTooLong;
    struct pollfd p {fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, poll_ms(deadline_s));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) return Read::kTimeout;
    char chunk[kMaxLineBytes];
    ssize_t n = rc < 0 ? -1 : ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {
      error = n == 0 ? "connection closed (EOF)" : std::string(std::strerror(errno));
      return Read::kClosed;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace ixfake::vllm
