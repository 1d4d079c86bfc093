// The sweep database as a file: its schema (tables sweeps, jobs, entries;
// see sweep_store.h), the schema version kept in PRAGMA user_version, and
// how a connection to it is opened: WAL journal, synchronous=FULL, foreign
// keys on, and the schema created or checked. A newer version than this
// build's, a file that is not a database and an unrelated database are
// refused, and the refused file is left as it was.
#pragma once

#include <string>

#include "core/base/result.h"
#include "submitter/sweep/sqlite_db.h"

namespace ix {

// The schema this build writes and reads.
inline constexpr int kSweepStoreSchemaVersion = 1;

// Opens the sweep database at `path`, creating it and its missing parent
// directories (0700: it holds the user's command lines and results), and
// brings its schema to kSweepStoreSchemaVersion. Errors name the path.
Result<SqliteDb> OpenSweepDatabase(const std::string& path);

// PRAGMA user_version.
Result<int> ReadSchemaVersion(const SqliteDb& db);

// Makes the schema in an empty database, or checks the version of one that
// has it, in one write transaction so two processes opening a new database
// at once do not both create it.
Status MigrateSweepSchema(const SqliteDb& db);

}  // namespace ix
