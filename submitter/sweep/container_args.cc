#include "submitter/sweep/container_args.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "submitter/sweep/slurm_cli.h"

namespace ix {
namespace {

bool Lower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool Alnum(char c) { return Lower(c) || (c >= 'A' && c <= 'Z'); }
bool Digit(char c) { return c >= '0' && c <= '9'; }
bool Hex(char c) { return Digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Docker's path-component: [a-z0-9]+ joined by '.', '_', '__' or '-'+.
bool PathComponent(std::string_view s) {
  size_t i = 0;
  while (true) {
    const size_t start = i;
    while (i < s.size() && Lower(s[i])) ++i;
    if (i == start) return false;
    if (i == s.size()) return true;
    if (s[i] == '.') {
      ++i;
    } else if (s[i] == '_') {
      i += (i + 1 < s.size() && s[i + 1] == '_') ? 2 : 1;
    } else if (s[i] == '-') {
      while (i < s.size() && s[i] == '-') ++i;
    } else {
      return false;
    }
  }
}

// Docker's domain: labels of letters, digits and inner '-', joined by '.',
// with an optional :PORT.
bool Domain(std::string_view s) {
  const size_t colon = s.find(':');
  if (colon != std::string_view::npos) {
    const std::string_view port = s.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    for (char c : port) {
      if (!Digit(c)) return false;
    }
    s = s.substr(0, colon);
  }
  if (s.empty()) return false;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t dot = std::min(s.find('.', start), s.size());
    const std::string_view label = s.substr(start, dot - start);
    if (label.empty() || label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!Alnum(c) && c != '-') return false;
    }
    start = dot + 1;
  }
  return true;
}

// Docker's tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
bool Tag(std::string_view s) {
  if (s.empty() || s.size() > 128 || s[0] == '.' || s[0] == '-') return false;
  for (char c : s) {
    if (!Alnum(c) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

// ALGORITHM:HEX, the algorithm letters and digits (starting with a letter)
// joined by '+', '.', '_' or '-'.
bool Digest(std::string_view s) {
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == s.size()) return false;
  bool need_letter = true;
  for (char c : s.substr(0, colon)) {
    if (need_letter) {
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
      need_letter = false;
    } else if (c == '+' || c == '.' || c == '_' || c == '-') {
      need_letter = true;
    } else if (!Alnum(c)) {
      return false;
    }
  }
  if (need_letter) return false;
  for (char c : s.substr(colon + 1)) {
    if (!Hex(c)) return false;
  }
  return true;
}

std::string ShowChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u > 0x20 && u < 0x7f) return std::string("'") + c + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02x", u);
  return buf;
}

// `given` absolute, normalised, without a trailing '/'.
std::string AbsolutePath(const std::string& given) {
  std::error_code ec;
  std::string out = std::filesystem::absolute(given, ec).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

Result<ImageRef> ParseImageRef(std::string_view image) {
  const std::string shown = "'" + std::string(image) + "'";
  auto bad = [&](const std::string& why) -> Error {
    return Error{shown + " is not a container image reference: " + why +
                 "; expected [REGISTRY/]NAME[:TAG][@DIGEST] (as vllm/vllm-openai:v0.11.0 or "
                 "nvcr.io/nvidia/vllm:25.09-py3) or enroot's REGISTRY#NAME[:TAG]"};
  };
  if (image.empty()) return bad("it is empty");
  if (image.size() > 512) return bad("it is longer than 512 characters");
  for (char c : image) {
    if (!Alnum(c) && c != '.' && c != '_' && c != '-' && c != '/' && c != ':' && c != '@' && c != '#') {
      return bad("it holds " + ShowChar(c) + " (allowed: letters, digits and . _ - / : @ #)");
    }
  }
  ImageRef r;
  std::string_view rest = image;
  if (const size_t at = rest.find('@'); at != std::string_view::npos) {
    r.digest = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    if (!Digest(r.digest)) return bad("digest '" + r.digest + "' is not ALGORITHM:HEX (as sha256:0f3a...)");
  }
  if (const size_t hash = rest.find('#'); hash != std::string_view::npos) {
    if (!r.digest.empty()) return bad("enroot's REGISTRY#NAME form takes no @DIGEST");
    r.enroot_form = true;
    r.registry = std::string(rest.substr(0, hash));
    rest = rest.substr(hash + 1);
    if (rest.find('#') != std::string_view::npos) return bad("it holds more than one '#'");
    if (!Domain(r.registry)) return bad("registry '" + r.registry + "' is not a host name[:port]");
  }
  // A ':' after the last '/' starts the tag; one before it is a registry port.
  const size_t slash = rest.rfind('/');
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    r.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (!Tag(r.tag)) {
      return bad("tag '" + r.tag + "' must be 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-'");
    }
  }
  // As Docker: a first component with '.' or ':', or "localhost", names a registry.
  const size_t first = rest.find('/');
  if (!r.enroot_form && first != std::string_view::npos) {
    const std::string_view head = rest.substr(0, first);
    if (head.find('.') != std::string_view::npos || head.find(':') != std::string_view::npos || head == "localhost") {
      r.registry = std::string(head);
      rest = rest.substr(first + 1);
      if (!Domain(r.registry)) return bad("registry '" + r.registry + "' is not a host name[:port]");
    }
  }
  r.repository = std::string(rest);
  if (r.repository.empty()) return bad("it names no image");
  if (r.registry.size() + r.repository.size() > 255) return bad("its name is longer than 255 characters");
  size_t start = 0;
  while (start <= r.repository.size()) {
    const size_t end = std::min(r.repository.find('/', start), r.repository.size());
    const std::string part = r.repository.substr(start, end - start);
    if (!PathComponent(part)) {
      return bad("name component '" + part + "' must be lowercase letters and digits, joined by '.', '_', '__' or '-'");
    }
    start = end + 1;
  }
  return r;
}

std::string EnrootReference(const std::string& image, const ImageRef& ref) {
  if (ref.enroot_form) return image;
  if (ref.digest.empty()) {
    if (ref.registry.empty()) return image;
    return ref.registry + "#" + ref.repository + (ref.tag.empty() ? "" : ":" + ref.tag);
  }
  // The digest is the manifest reference; the tag it was written with is
  // not part of what enroot fetches (as InferenceX's enroot_uri_for_image).
  if (ref.registry.empty()) {
    const std::string repo = ref.repository.find('/') == std::string::npos ? "library/" + ref.repository : ref.repository;
    return "registry-1.docker.io#" + repo + ":" + ref.digest;
  }
  return ref.registry + "#" + ref.repository + ":" + ref.digest;
}

std::string SquashFileName(const std::string& image) {
  std::string out = image;
  for (char& c : out) {
    if (c == '/' || c == ':' || c == '@' || c == '#') c = '_';
  }
  return out + ".sqsh";
}

std::string SquashPath(const std::string& squash_dir, const std::string& image) {
  return squash_dir + "/" + SquashFileName(image);
}

std::string ModelMount(const ContainerSettings& s, const std::string& model_path) {
  if (!s.model_dir.empty()) return s.model_dir;
  if (!model_path.empty() && model_path[0] == '/') return model_path;
  return "";
}

std::vector<std::string> ContainerSrunArgs(const ContainerSettings& s, const std::string& image,
                                           const std::string& model_path, const std::string& result_dir,
                                           const std::function<bool(const std::string&)>& exists) {
  std::string use = image;
  if (!s.squash_dir.empty() && exists(SquashPath(s.squash_dir, image))) {
    use = SquashPath(s.squash_dir, image);
  } else if (Result<ImageRef> ref = ParseImageRef(image); ref) {
    use = EnrootReference(image, ref.value());
  }
  std::string mounts;
  if (const std::string model = ModelMount(s, model_path); !model.empty()) mounts = model + ":" + model + ",";
  mounts += result_dir + ":" + result_dir;
  return {"--container-image=" + use, "--container-mounts=" + mounts, "--no-container-mount-home",
          "--container-workdir=" + result_dir, "--no-container-entrypoint"};
}

Result<std::string> ResolveSquashDir(const std::optional<std::string>& flag) {
  const char* env = std::getenv("IX_SQUASH_DIR");
  if (!flag && (!env || !*env)) return std::string();
  const std::string given = flag ? *flag : env;
  const std::string what = flag ? "--squash-dir " + given : "IX_SQUASH_DIR=" + given;
  if (given.empty()) return Error{"--squash-dir: empty; give the directory of the site's squash files"};
  const std::string dir = AbsolutePath(given);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Error{what + ": no such directory; the squash directory holds the images' .sqsh files "
                        "(create it, or leave it out and Pyxis imports each image itself)"};
  }
  return dir;
}

Result<ContainerSettings> ResolveContainerSettings(bool no_container, const std::optional<std::string>& squash_dir,
                                                   const std::optional<std::string>& model_dir) {
  ContainerSettings s;
  if (no_container) return s;
  s.enabled = true;
  Result<std::string> squash = ResolveSquashDir(squash_dir);
  if (!squash) return squash.error();
  s.squash_dir = squash.value();
  const char* env = std::getenv("IX_MODEL_DIR");
  if (model_dir || (env && *env)) {
    const std::string given = model_dir ? *model_dir : env;
    const std::string what = model_dir ? "--model-dir" : "IX_MODEL_DIR";
    if (given.empty()) return Error{what + ": empty; give the host directory of the model checkpoints"};
    s.model_dir = AbsolutePath(given);
    if (Status st = CheckMountPath(what, s.model_dir); !st) return st.error();
  }
  return s;
}

Status CheckMountPath(const std::string& what, const std::string& path) {
  if (path.empty() || path[0] != '/') return Error{what + " '" + path + "': must be an absolute path to mount it"};
  if (path.find_first_of(",:") != std::string::npos) {
    return Error{what + " '" + path + "': holds ',' or ':', which Pyxis's --container-mounts=SRC:DST[,...] cannot "
                 "carry; choose another path, or run on the host with --no-container"};
  }
  return Ok{};
}

Status CheckSrunHasPyxis(const std::vector<std::string>& env) {
  Result<CommandOutput> r = RunCommand({"srun", "--help"}, env, std::chrono::seconds(10));
  if (!r) return Error{"cannot check srun for Pyxis: " + r.error().message};
  if (!r.value().ok()) {
    return Error{"cannot check srun for Pyxis: srun --help: " + r.value().Describe() + ": " + r.value().err};
  }
  if (r.value().out.find("--container-image") == std::string::npos &&
      r.value().err.find("--container-image") == std::string::npos) {
    return Error{"srun has no --container-image option (`srun --help` does not list it): Pyxis is not in this "
                 "cluster's plugstack.conf, so the config rows' images cannot be used; run the steps on the hosts "
                 "with --no-container, or install Pyxis"};
  }
  return Ok{};
}

}  // namespace ix
