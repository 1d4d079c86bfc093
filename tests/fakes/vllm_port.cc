#include "vllm_port.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_common.h"

namespace ixfake::vllm {
namespace {

// The first address of `res` that binds; -1 with `err` set when none does.
int bind_first(const struct addrinfo* res, int& err) {
  for (auto* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) return fd;
    err = errno;
    ::close(fd);
  }
  return -1;
}

int local_port(int fd) {
  struct sockaddr_storage ss {};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<struct sockaddr*>(&ss), &len);
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<struct sockaddr_in*>(&ss)->sin_port);
  return ntohs(reinterpret_cast<struct sockaddr_in6*>(&ss)->sin6_port);
}

}  // namespace

int reserve_port(const std::string& host, int port, int& bound_port) {
  struct addrinfo hints {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  struct addrinfo* res = nullptr;
  std::string port_text = std::to_string(port);
  int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &res);
  if (rc != 0) {
    std::fprintf(stderr, "ERROR: cannot resolve --host %s: %s\n", host.c_str(), gai_strerror(rc));
    std::exit(1);
  }
  int err = 0;
  int fd = bind_first(res, err);
  ::freeaddrinfo(res);
  if (fd < 0) {
    std::fprintf(stderr, "ERROR: [Errno %d] error while attempting to bind on address ('%s', %d): %s\n", err,
                 host.c_str(), port, std::strerror(err));
    logf("ERROR: cannot bind %s:%d: %s", host.c_str(), port, std::strerror(err));
    std::exit(1);
  }
  bound_port = local_port(fd);
  return fd;
}

}  // namespace ixfake::vllm
