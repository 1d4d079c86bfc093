// Where the sweep database lives, and a warning when that is a network file
// system: SQLite's WAL needs shared memory that only one host can map, so a
// database on NFS (a usual $HOME) used from two login nodes can be corrupted.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/base/result.h"

namespace ix {

// $XDG_STATE_HOME/inferencex/ix.db when XDG_STATE_HOME is set to an
// absolute path (the XDG spec ignores relative ones), else $HOME/.local/
// state/inferencex/ix.db: state, not data, and per machine by intent (a
// WAL database must not be shared across hosts, as on an NFS home). `env`
// is NAME=VALUE strings (CurrentEnvironment()). An error when neither gives
// an absolute path. Creates nothing.
Result<std::string> DefaultDbPath(const std::vector<std::string>& env);
// Where earlier builds put it ($XDG_DATA_HOME or ~/.local/share); still read
// when a database is there, so existing sweeps stay resumable.
std::optional<std::string> LegacyDbPath(const std::vector<std::string>& env);

// The database path: `db` when given; else DefaultDbPath (node-local state
// directory), unless only the legacy path (~/.local/share) has a database,
// which is then kept, with `note` saying so. `exists` tells whether a file is
// there (a parameter, for tests).
struct DbPathChoice {
  std::string path;
  std::string note;  // "" or one line
};
Result<DbPathChoice> ChooseDbPath(const std::optional<std::string>& db, const std::vector<std::string>& env,
                                  bool (*exists)(const std::string&));
// ChooseDbPath for commands that only read (status, events): an error naming
// the path when no database is there, so reading never creates one.
Result<std::string> ExistingDbPath(const std::optional<std::string>& db, const std::vector<std::string>& env,
                                   bool (*exists)(const std::string&));

// The name of the network file system `f_type` (statfs) is ("NFS", "CIFS",
// "SMB2", "Lustre", "GPFS", ...), or nullopt for a local one.
std::optional<std::string> NetworkFsName(long f_type);
// The network file system holding `path` (or its nearest existing parent).
std::optional<std::string> NetworkFsOf(const std::string& path);

}  // namespace ix
