-- tests/login/fixture.sql: a small snapshot for the pamtester, sudo and
-- home directory tests (the ssh tests use a snapshot that syncd writes from
-- the SCIM test server). Loaded after syncd/snapshot/schema.sql.
--
--   alice  active, slurm-users                 allowed
--   bob    disabled, slurm-users, slurm-sudo   refused: disabled
--   carol  active, only in "visitors"          refused: no allowed group
--   dave   active, slurm-sudo                  allowed, may sudo
--   games  uid 20005, but /etc/passwd has games (uid 5): the login is the
--          local account, so pam_scim must not police it (it is disabled
--          here to make that visible)
INSERT INTO meta VALUES ('schema_version', '2'), ('serial', '1'),
  ('created_at', '2025-01-01T00:00:00Z'), ('source', 'tests/login/fixture.sql');
INSERT INTO groups (gid, name, scim_id) VALUES (30001, 'slurm-users', 'g1'), (30002, 'slurm-sudo', 'g2'),
  (30003, 'visitors', 'g3'), (20001, 'alice', 'p1'), (20002, 'bob', 'p2'),
  (20003, 'carol', 'p3'), (20004, 'dave', 'p4');
INSERT INTO users VALUES
  (20001, 'alice', 20001, 'Alice A', '/home/alice', '/bin/bash', 1, 'u1'),
  (20002, 'bob',   20002, 'Bob B',   '/home/bob',   '/bin/bash', 0, 'u2'),
  (20003, 'carol', 20003, 'Carol C', '/home/carol', '/bin/bash', 1, 'u3'),
  (20004, 'dave',  20004, 'Dave D',  '/home/dave',  '/bin/bash', 1, 'u4'),
  (20005, 'games', 20005, 'Not the local games', '/home/games', '/bin/bash', 0, 'u5');
INSERT INTO memberships VALUES (30001, 'alice'), (30001, 'bob'), (30002, 'bob'),
  (30003, 'carol'), (30002, 'dave'), (20001, 'alice'), (20002, 'bob'),
  (20003, 'carol'), (20004, 'dave');
-- groups.members as syncd writes it: the names, comma-separated, in name order.
UPDATE groups SET members = coalesce((SELECT group_concat(user_name, ',') FROM
  (SELECT user_name FROM memberships m WHERE m.gid = groups.gid ORDER BY user_name)), '');
