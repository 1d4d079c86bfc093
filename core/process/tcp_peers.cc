#include "core/process/tcp_peers.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>

#include "core/base/file_text.h"
#include "core/base/text.h"

namespace ix {
namespace {

using Addr16 = std::array<uint8_t, 16>;

// `addr` as 16 bytes: IPv6 as is, IPv4 as its v4-mapped form (::ffff:a.b.c.d).
std::optional<Addr16> ParseAddr(const std::string& addr) {
  Addr16 out{};
  in_addr a4{};
  if (::inet_pton(AF_INET, addr.c_str(), &a4) == 1) {
    out[10] = out[11] = 0xff;
    std::memcpy(out.data() + 12, &a4, 4);
    return out;
  }
  in6_addr a6{};
  if (::inet_pton(AF_INET6, addr.c_str(), &a6) == 1) {
    std::memcpy(out.data(), &a6, 16);
    return out;
  }
  return std::nullopt;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The kernel prints an address as 32-bit words in host order, each as 8 hex
// digits: "0100007F" is 127.0.0.1 on little-endian machines.
std::optional<Addr16> ParseKernelAddr(std::string_view hex) {
  if (hex.size() != 8 && hex.size() != 32) return std::nullopt;
  Addr16 out{};
  const size_t words = hex.size() / 8;
  uint8_t* dst = words == 1 ? out.data() + 12 : out.data();
  if (words == 1) out[10] = out[11] = 0xff;
  for (size_t w = 0; w < words; ++w) {
    uint32_t v = 0;
    for (size_t i = 0; i < 8; ++i) {
      const int d = HexDigit(hex[w * 8 + i]);
      if (d < 0) return std::nullopt;
      v = (v << 4) | static_cast<uint32_t>(d);
    }
    std::memcpy(dst + 4 * w, &v, 4);  // back to the bytes as the kernel holds them
  }
  return out;
}

}  // namespace

std::string KernelEndpointText(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == text.size() || text.size() - colon - 1 > 4) return "";
  unsigned port = 0;
  for (char c : text.substr(colon + 1)) {
    const int d = HexDigit(c);
    if (d < 0) return "";
    port = (port << 4) | static_cast<unsigned>(d);
  }
  const std::optional<Addr16> a = ParseKernelAddr(text.substr(0, colon));
  if (!a) return "";
  const bool v4 = colon == 8;
  char addr[INET6_ADDRSTRLEN];
  if (!::inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? a->data() + 12 : a->data(), addr, sizeof addr)) return "";
  return (v4 ? std::string(addr) : "[" + std::string(addr) + "]") + ":" + std::to_string(port);
}

bool TableHasEstablishedTo(std::string_view table, const std::string& addr) {
  const std::optional<Addr16> want = ParseAddr(addr);
  if (!want) return false;
  for (std::string_view line : Lines(table)) {
    // "  sl  local_address rem_address   st ...": fields 1 (local), 2 (remote), 3 (state).
    std::vector<std::string_view> f;
    for (std::string_view w : Split(line, ' ')) {
      if (!w.empty()) f.push_back(w);
    }
    if (f.size() < 4 || f[3] != "01") continue;  // 01: TCP_ESTABLISHED
    const std::string_view remote = f[2];
    const size_t colon = remote.find(':');
    if (colon == std::string_view::npos) continue;
    const std::optional<Addr16> got = ParseKernelAddr(remote.substr(0, colon));
    if (got && *got == *want) return true;
  }
  return false;
}

Result<bool> HasEstablishedTo(const std::string& addr) {
  if (!ParseAddr(addr)) return Error{"'" + addr + "' is not a numeric IPv4 or IPv6 address"};
  bool any_read = false;
  std::string last_error;
  for (const char* path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    int err = 0;
    const std::string text = ReadFileText(path, &err);
    if (err) {
      last_error = std::string(path) + ": " + std::strerror(err);
      continue;
    }
    any_read = true;
    if (TableHasEstablishedTo(text, addr)) return true;
  }
  if (!any_read) return Error{"cannot read the TCP tables: " + last_error};
  return false;
}

}  // namespace ix
