// The store's schema and its migrations: PRAGMA user_version is the schema version, PRAGMA
// application_id marks the file as an epochcast store.
#pragma once

#include "sqlite.hpp"

namespace epochcast::store_schema {

// 'EPCS': another program's SQLite file is refused, not written into.
inline constexpr int kApplicationId = 0x45504353;

// Reads the version; refuses another program's database and a newer schema. Returns the
// version found (0: an empty, new file).
int check(sqlite::Db& db);
// Brings the schema to kStoreSchemaVersion in one transaction per step (write mode only).
void migrate(sqlite::Db& db, int from_version);

}  // namespace epochcast::store_schema
