# tests/syncd/hostile.sh: sourced by tests/syncd/run.sh (its helpers, $T,
# $ADMIN, $SYNCD, nss, scim_ns, $ST). The syncd part of the hostile-input
# suite through the real binaries: attack records are added at the test
# SCIM server next to one good user; `syncd sync --once` must reject each
# naming its reason and the option behind it, getent must show none of
# them and everything else exactly as before plus the good user, and `id`
# of a SCIM user must show no gid below 1000. (The full matrix of attack
# classes is syncd/hostile_test.go, in the go suite.)
HS=$T/hostile
mkdir -p "$HS"
# The syncd host's local files: the host's, plus a stale member line.
cp /etc/passwd "$HS/passwd"
{ cat /etc/group; echo "hostile-priv:x:26999:ghostly"; } > "$HS/group"
{ cat "$T/syncd.toml"; printf 'local_passwd = "%s"\nlocal_group = "%s"\n' "$HS/passwd" "$HS/group"; } > "$HS/syncd.toml"
chmod 0600 "$HS/syncd.toml"
hsyncd() { "$SYNCD" --config "$HS/syncd.toml" "$@"; }

hsyncd sync --once > "$HS/before.out" 2>&1
nss passwd | sort > "$HS/before.passwd"
nss group | sort > "$HS/before.group"
victim_home=$(head -n1 "$HS/before.passwd" | cut -d: -f6)

adduser() { # NAME UID GID HOME
  curl -fsS -X POST "$ADMIN/_admin/users" -d "{\"userName\":\"$1\",\"posix\":{\"uidNumber\":$2,\"gidNumber\":$3,\"homeDirectory\":\"$4\",\"loginShell\":\"/bin/bash\"}}" > /dev/null ||
    bad "admin: add $1"
}
adduser shadowy 4000101 42 /home/shadowy
adduser diskette 4000102 6 /home/diskette
adduser etcowner 4000103 200000 /etc
adduser dropin 4000104 200000 /etc/systemd/system/ssh.service.d
adduser rootie 4000105 200000 /root
adduser cacheowner 4000106 200000 /var/lib/scimbridge
adduser homethief 4000107 200000 "$victim_home"
adduser SUDO 4000108 200000 /home/sudo
adduser Docker 4000109 200000 /home/docker
adduser Systemd-Network 4000110 200000 /home/systemd-network
adduser ghostly 4000111 200000 /home/ghostly
adduser lowuid 500 200000 /home/lowuid
# userNames as IdPs send them, mapped by the default user_names: none of
# the mappings reaches a reserved or local name.
adduser Root@Evil.Example 4000112 200000 /home/rootmail
adduser Daemon@corp.example 4000113 200000 /home/daemonmail
adduser "ｒoot@evil.example" 4000114 200000 /home/fullwidth
adduser zz.fine 4000120 200000 /home/zz.fine
curl -fsS -X POST "$ADMIN/_admin/groups" -d '{"displayName":"SLURM-USERS","gidNumber":200990,"members":["zz.fine"]}' > /dev/null || bad "admin: add SLURM-USERS"
curl -fsS -X POST "$ADMIN/_admin/groups" -d '{"displayName":"Wheel","gidNumber":200991,"members":["zz.fine"]}' > /dev/null || bad "admin: add Wheel"

hsyncd sync --once > "$HS/sync.out" 2> "$HS/sync.err"
expect_eq "hostile: sync --once commits the rest (exit 0)" 0 "$?"
# rejected KIND NAME REASON OPTION: the report names the reason and option.
rejected() {
  check "hostile: $1 $2 rejected: $3 [$4]" grep -qE "^! rejected $1 \"$2\" .*: $3: .*\[[^]]*$4" "$HS/sync.out"
}
rejected user shadowy below-min-id min_id
rejected user diskette below-min-id min_id
rejected user etcowner home-system-path home_roots
rejected user dropin home-system-path home_roots
rejected user rootie home-system-path home_roots
rejected user cacheowner home-system-path home_roots
rejected user homethief duplicate-home "fix the source"
rejected user SUDO reserved-name reserved_names
rejected user Docker reserved-name reserved_names
rejected user Systemd-Network reserved-name reserved_names
rejected user ghostly local-group-member local_group
rejected user lowuid below-min-id min_id
rejected user Root@Evil.Example reserved-name reserved_names
rejected user Daemon@corp.example reserved-name reserved_names
rejected user "ｒoot@evil.example" bad-name user_names
rejected group SLURM-USERS duplicate-name "fix the source"
rejected group Wheel reserved-name reserved_names
nss passwd | sort > "$HS/after.passwd"
nss group | sort > "$HS/after.group"
expect_eq "hostile: getent passwd is what it was plus zz.fine, nothing else" \
  "$({ cat "$HS/before.passwd"; echo "zz.fine:*:4000120:200000::/home/zz.fine:/bin/bash"; } | sort)" \
  "$(cat "$HS/after.passwd")"
check "hostile: no attack record resolves" bash -c "! grep -qiE '^(shadowy|diskette|etcowner|dropin|rootie|cacheowner|homethief|sudo|docker|systemd-network|ghostly|lowuid|root|daemon):' '$HS/after.passwd'"
expect_eq "hostile: getent group unchanged (SLURM-USERS and Wheel refused, slurm-users keeps its members)" \
  "$(cat "$HS/before.group")" "$(cat "$HS/after.group")"
ids=$(scim_ns "$ST" id zz.fine 2>&1)
check "hostile: id zz.fine resolves ($ids)" grep -q 'uid=4000120(zz.fine)' <<<"$ids"
low=$(grep -oE '[0-9]+\(' <<<"$ids" | tr -d '(' | awk '$1 < 1000' | head -n1)
expect_eq "hostile: id zz.fine shows no uid or gid below 1000" "" "$low"
