-- derive.sql: fills the derived table user_groups from users and
-- memberships, as syncd's writer does (see schema.sql). For snapshots made
-- by hand (test fixtures): run it after every insert, e.g.
--   cat schema.sql fixture.sql derive.sql | sqlite3 snap.db
-- It replaces whatever user_groups held. The ordered subquery orders
-- group_concat (SQLite aggregates rows in the order it reads them).
DELETE FROM user_groups;
INSERT INTO user_groups (name, uid, gid, gids)
  SELECT u.name, u.uid, u.gid, coalesce(m.gids, '')
  FROM users u LEFT JOIN (
    SELECT user_name, group_concat(gid, ',') AS gids
    FROM (SELECT user_name, gid FROM memberships ORDER BY user_name, gid)
    GROUP BY user_name) m ON m.user_name = u.name
  ORDER BY u.name;
