-- scimbridge cache snapshot, schema version 3 (version 2 plus: groups.members
-- may be NULL, see groups).
--
-- This file is the single source of truth for the snapshot layout: the Go
-- writer embeds it, and the C reader's tests build their snapshots from it.
-- The C reader (c/, behind include/scimcache.h) refuses any file whose meta.schema_version it
-- does not know, so a change here that readers must notice bumps the
-- version (and the reader's SCIM_SCHEMA_VERSION) together.
--
-- The file is world-readable and is read by every process on the node:
-- it holds no secrets. It is written once into a temp file, never modified
-- afterwards (readers open it with immutable=1), and renamed over the live
-- file. Journal mode stays DELETE: WAL readers would need write access to
-- the -shm file.

PRAGMA application_id = 1396918605; -- 0x5343494D, "SCIM" in ASCII
PRAGMA user_version = 3;

-- The NSS index (syncd/snapshot/index.go): derived from users, groups and
-- memberships, one row (id 1) holding one blob that the C reader reads
-- from the file's memory map without SQL. Created first so that its root
-- is page 2; the writer inserts its row last, into a file without free
-- pages, so that its overflow pages follow one another. Older readers
-- ignore it; files without it are read through SQL.
CREATE TABLE nss_index (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    data BLOB    NOT NULL
);

-- meta keys: schema_version, serial (increases by one per commit),
-- created_at (RFC 3339, UTC), source (where the directory came from; never
-- a credential), users, groups, memberships, ssh_keys, associations (counts),
-- slurm_synced_at (RFC 3339, UTC; set when associations were read back).
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- uid is the rowid: getpwuid is one B-tree probe.
CREATE TABLE users (
    uid     INTEGER PRIMARY KEY,
    name    TEXT    NOT NULL UNIQUE,
    gid     INTEGER NOT NULL,
    gecos   TEXT    NOT NULL DEFAULT '',
    home    TEXT    NOT NULL,
    shell   TEXT    NOT NULL,
    active  INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    scim_id TEXT    NOT NULL DEFAULT ''
);

-- getpwnam reads only this index: one B-tree descent instead of the name
-- index's plus the table's (about a fifth faster for random names; the
-- file grows by about half). The reader names it (INDEXED BY): SQLite
-- would otherwise take the UNIQUE index on name.
CREATE INDEX users_by_name ON users (name, uid, gid, gecos, home, shell, active);

-- members repeats the group's member names, comma-separated in name order
-- (as in /etc/group; validated names never contain a comma), so getgrgid
-- of a 1,000-member group reads one row instead of stepping 1,000.
-- Schema version 3: NULL when that list is longer than 1,000 bytes (about
-- 90 names): the group's members are then only its memberships rows, in
-- name order, and the NSS index keeps them in pieces (index.go). A list
-- stored whole made one new member of a 90,000-member group rewrite the
-- list from that name on (about 240 pages at 100,000 users); a row of
-- memberships is one leaf. Readers: coalesce(members, group_concat of the
-- memberships rows in name order) (c/sql.c).
CREATE TABLE groups (
    gid     INTEGER PRIMARY KEY,
    name    TEXT    NOT NULL UNIQUE,
    scim_id TEXT    NOT NULL DEFAULT '',
    members TEXT             DEFAULT ''
);

-- Memberships, one row each; a membership test (pam_scim's groups) is one
-- probe of the primary key.
CREATE TABLE memberships (
    gid       INTEGER NOT NULL REFERENCES groups (gid),
    user_name TEXT    NOT NULL REFERENCES users (name),
    PRIMARY KEY (gid, user_name)
) WITHOUT ROWID;

-- initgroups in one B-tree descent (schema version 2): one row per user,
-- its supplementary gids ascending, as decimal numbers separated by commas
-- (the gids of its memberships rows). uid and gid repeat the user's, so
-- that the reader's id checks need no second read. A range scan of a
-- (user_name, gid) index cost about 60 ns per group and 4.2 us for a user
-- in 50 groups. Derived data: syncd's writer fills it from the same
-- groups as memberships; a hand-made snapshot runs derive.sql after its
-- inserts.
CREATE TABLE user_groups (
    name TEXT    PRIMARY KEY,
    uid  INTEGER NOT NULL,
    gid  INTEGER NOT NULL,
    gids TEXT    NOT NULL
) WITHOUT ROWID;

-- OpenSSH public keys, one line each, in the order the source gave them.
CREATE TABLE ssh_keys (
    user_name TEXT    NOT NULL REFERENCES users (name),
    seq       INTEGER NOT NULL,
    key       TEXT    NOT NULL,
    PRIMARY KEY (user_name, seq)
) WITHOUT ROWID;

-- Slurm associations as read back from slurmdbd after a reconcile
-- (sacctmgr show assoc). qos is Slurm's comma-separated list. blocked is 1
-- while a removal waits for the user's jobs to finish (MaxSubmitJobs=0).
CREATE TABLE slurm_associations (
    user_name   TEXT    NOT NULL,
    account     TEXT    NOT NULL,
    qos         TEXT    NOT NULL DEFAULT '',
    default_qos TEXT    NOT NULL DEFAULT '',
    is_default  INTEGER NOT NULL DEFAULT 0 CHECK (is_default IN (0, 1)),
    blocked     INTEGER NOT NULL DEFAULT 0 CHECK (blocked IN (0, 1)),
    PRIMARY KEY (user_name, account)
) WITHOUT ROWID;

-- Storage limits the identity provider sent (an optional SCIM attribute
-- per user, [attributes] home_quota; syncd/snapshot/quotas.go): the hard
-- limit in bytes, as validated on the head. Read only by the homes pass
-- (syncd/homes), on the head or on a storage node that mirrors it, which
-- caps it by its own configuration. kind is 'user' (name: a user name,
-- [attributes] home_quota) or 'group' (a group name: its project
-- directory, [attributes] project_quota). Optional: the C reader ignores it,
-- files without it (older writers) have none, so no version bump.
CREATE TABLE quotas (
    kind TEXT    NOT NULL CHECK (kind IN ('user', 'group')),
    name TEXT    NOT NULL,
    hard INTEGER NOT NULL CHECK (hard > 0),
    PRIMARY KEY (kind, name)
) WITHOUT ROWID;
