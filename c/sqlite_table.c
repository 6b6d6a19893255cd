/*
 * sqlite_table.c - the one symbol of libscimbridge-sqlite.so: the table
 * of SQLite calls libnss_scim.so.2 makes (c/sqlite_api.h says why the
 * module loads SQLite only on its first SQL call).
 *
 * The library is this file and the private SQLite object
 * (c/sqlite_private.c: single-threaded, every symbol hidden); its version
 * script exports only SCIM_SQLITE_API_SYMBOL, so nothing of it binds to
 * the host's libsqlite3 or is seen by the host, and it is dlopened
 * RTLD_LOCAL besides. Compiled with the reader's warnings: a signature
 * here that differs from SQLite's is a compile error, not a wrong call.
 */
#include "sqlite_api.h"

__attribute__((visibility("default")))
const struct scim_sqlite_api scimbridge_sqlite_api_v1 = {
	.version = SCIM_SQLITE_API_VERSION,
	.size = sizeof(struct scim_sqlite_api),
#define SCIM_SQLITE_ENTRY(ret, name, params) .name = sqlite3_##name,
	SCIM_SQLITE_CALLS(SCIM_SQLITE_ENTRY)
#undef SCIM_SQLITE_ENTRY
};
