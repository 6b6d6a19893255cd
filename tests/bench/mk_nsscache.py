#!/usr/bin/env python3
"""mk_nsscache.py SNAPSHOT ETCDIR [CACHEDIR]: the snapshot's users and
groups as the two peers the NSS benchmark compares libnss_scim with.

Writes into ETCDIR (a tests/lib.sh stage's etc, overlaid on /etc):
  passwd, group          the host's /etc/passwd and /etc/group followed by
                         every snapshot entry (glibc "files"; root and the
                         system accounts stay first, so the namespace works)
and into CACHEDIR (default ETCDIR):
  passwd.cache, group.cache and their .ixname/.ixuid/.ixgid indexes, as
                         nsscache's "files" cache writes them for
                         libnss-cache (nss_cache/caches/files.py)

The index format, taken from nsscache (libnss-cache bsearch()es it):
one line per key, sorted bytewise (libnss-cache compares with strcmp), each
"key\\0offset\\0" padded with NULs to one width for the whole file (the
longest key plus the longest offset, plus the two NULs), then "\\n".
libnss-cache takes the width from the first line, and ignores an index that
is older than its data file, so the indexes are written after the data.
The offset is where the entry's line starts in the data file.

The benchmark also uses passwd.cache and group.cache as its list of
expected answers: they are a plain dump of the snapshot.
"""
import os
import sqlite3
import sys


def check_field(value, what):
    # The colon formats cannot represent these; a snapshot holding them
    # would make the peers answer differently from libnss_scim.
    if any(c in value for c in ":\n,"):
        sys.exit("mk_nsscache: %s %r has ':', ',' or a newline" % (what, value))
    return value


def write_atomic(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)


def write_index(path, index):
    """index: {key bytes: offset}. nsscache's WriteIndex, byte for byte."""
    keys = sorted(index)
    offs = {k: str(index[k]).encode() for k in keys}
    width = max(len(k) for k in keys) + max(len(o) for o in offs.values())
    out = bytearray()
    for k in keys:
        o = offs[k]
        out += k + b"\0" + o + b"\0" + b"\0" * (width - len(k) - len(o)) + b"\n"
    write_atomic(path, bytes(out))


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: mk_nsscache.py SNAPSHOT ETCDIR [CACHEDIR]")
    snap, etc = sys.argv[1], sys.argv[2]
    cdir = sys.argv[3] if len(sys.argv) == 4 else etc
    db = sqlite3.connect("file:%s?mode=ro&immutable=1" % snap, uri=True)

    pw = bytearray()
    ix_name, ix_uid = {}, {}
    for name, uid, gid, gecos, home, shell in db.execute(
            "SELECT name, uid, gid, gecos, home, shell FROM users ORDER BY uid"):
        line = ":".join([check_field(name, "user"), "x", str(uid), str(gid),
                         check_field(gecos, "gecos"), check_field(home, "home"),
                         check_field(shell, "shell")]).encode() + b"\n"
        ix_name[name.encode()] = len(pw)
        ix_uid[str(uid).encode()] = len(pw)
        pw += line

    members = {}
    for gid, user in db.execute(
            "SELECT gid, user_name FROM memberships ORDER BY gid, user_name"):
        members.setdefault(gid, []).append(check_field(user, "member"))
    gr = bytearray()
    ix_gname, ix_gid = {}, {}
    for gid, name in db.execute("SELECT gid, name FROM groups ORDER BY gid"):
        line = ("%s:x:%d:%s\n" % (check_field(name, "group"), gid,
                                  ",".join(members.get(gid, [])))).encode()
        ix_gname[name.encode()] = len(gr)
        ix_gid[str(gid).encode()] = len(gr)
        gr += line
    db.close()
    if not ix_name or not ix_gname:
        sys.exit("mk_nsscache: the snapshot has no users or no groups")

    pw, gr = bytes(pw), bytes(gr)
    for base, data in (("passwd", pw), ("group", gr)):
        with open("/etc/" + base, "rb") as f:
            host = f.read()
        if host and not host.endswith(b"\n"):
            host += b"\n"
        write_atomic(os.path.join(etc, base), host + data)
        write_atomic(os.path.join(cdir, base + ".cache"), data)
    # Indexes after their data files: libnss-cache falls back to a linear
    # scan when the data file is newer than the index.
    write_index(os.path.join(cdir, "passwd.cache.ixname"), ix_name)
    write_index(os.path.join(cdir, "passwd.cache.ixuid"), ix_uid)
    write_index(os.path.join(cdir, "group.cache.ixname"), ix_gname)
    write_index(os.path.join(cdir, "group.cache.ixgid"), ix_gid)


if __name__ == "__main__":
    main()
