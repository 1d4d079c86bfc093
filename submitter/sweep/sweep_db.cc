#include "submitter/sweep/sweep_db.h"

#include <sys/vfs.h>

#include <filesystem>

#include "core/process/process.h"

namespace ix {
namespace {

// $XDG_VAR/inferencex/ix.db where XDG_VAR is absolute, else
// $HOME/HOME_DIR/inferencex/ix.db where HOME is.
std::optional<std::string> DbPathUnder(const std::vector<std::string>& env, const char* xdg_var,
                                       const char* home_dir) {
  const std::optional<std::string> xdg = FindEnv(env, xdg_var);
  if (xdg && !xdg->empty() && (*xdg)[0] == '/') return *xdg + "/inferencex/ix.db";
  const std::optional<std::string> home = FindEnv(env, "HOME");
  if (home && !home->empty() && (*home)[0] == '/') {
    const std::string base = home->back() == '/' ? home->substr(0, home->size() - 1) : *home;
    return base + "/" + home_dir + "/inferencex/ix.db";
  }
  return std::nullopt;
}

}  // namespace

Result<std::string> DefaultDbPath(const std::vector<std::string>& env) {
  if (std::optional<std::string> path = DbPathUnder(env, "XDG_STATE_HOME", ".local/state")) return *path;
  return Error{"cannot choose where the sweep database goes: neither XDG_STATE_HOME nor HOME is an absolute path; "
               "pass --db PATH"};
}

std::optional<std::string> LegacyDbPath(const std::vector<std::string>& env) {
  return DbPathUnder(env, "XDG_DATA_HOME", ".local/share");
}

Result<DbPathChoice> ChooseDbPath(const std::optional<std::string>& db, const std::vector<std::string>& env,
                                  bool (*exists)(const std::string&)) {
  if (db) return DbPathChoice{*db, ""};
  Result<std::string> fresh = DefaultDbPath(env);
  const std::optional<std::string> legacy = LegacyDbPath(env);
  // Sweeps recorded by an earlier build stay resumable where they are.
  if (legacy && !(fresh && exists(fresh.value())) && exists(*legacy)) {
    return DbPathChoice{*legacy, "using the existing sweep database " + *legacy + " (the default is now " +
                                     (fresh ? fresh.value() : std::string("$XDG_STATE_HOME/inferencex/ix.db")) +
                                     "; move it there, or pass --db)"};
  }
  if (!fresh) return fresh.error();
  return DbPathChoice{fresh.value(), ""};
}

std::optional<std::string> NetworkFsName(long f_type) {
  // Magic numbers from linux/magic.h and the file systems' own headers.
  switch (static_cast<unsigned long>(f_type) & 0xffffffffUL) {
    case 0x6969: return "NFS";
    case 0xff534d42: return "CIFS";
    case 0xfe534d42: return "SMB2";
    case 0x517b: return "SMB";
    case 0x0bd00bd0: return "Lustre";
    case 0x47504653: return "GPFS";
    case 0x19830326: return "BeeGFS";
    case 0x00c36400: return "CephFS";
    case 0x65735546: return "FUSE";  // sshfs and the like; also some local ones, but better said
    case 0x564c: return "NCP";
    case 0x6b414653: return "AFS";
    default: return std::nullopt;
  }
}

std::optional<std::string> NetworkFsOf(const std::string& path) {
  std::filesystem::path p = std::filesystem::path(path);
  std::error_code ec;
  // The database and its directory may not exist yet: the nearest parent that does.
  while (!p.empty() && !std::filesystem::exists(p, ec)) p = p.parent_path();
  if (p.empty()) p = ".";
  struct statfs st {};
  if (::statfs(p.c_str(), &st) != 0) return std::nullopt;
  return NetworkFsName(static_cast<long>(st.f_type));
}

Result<std::string> ExistingDbPath(const std::optional<std::string>& db, const std::vector<std::string>& env,
                                   bool (*exists)(const std::string&)) {
  Result<DbPathChoice> choice = ChooseDbPath(db, env, exists);
  if (!choice) return choice.error();
  if (!exists(choice.value().path)) {
    return Error{"no sweep database at " + choice.value().path + " (--db PATH names another; `ixsubmit sweep` makes it)"};
  }
  return choice.value().path;
}

}  // namespace ix
