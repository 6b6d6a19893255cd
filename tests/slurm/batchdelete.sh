# tests/slurm/batchdelete.sh: sourced by tests/slurm/run.sh after the
# leaving-a-group section (issue 21). Several users leave several groups in
# one change: the pass deletes their associations on several accounts in
# one `sacctmgr delete user where name=... account=...` (syncd/slurm/
# removals.go), and the real slurmdbd must be left with exactly the
# associations that were meant to stay: another user's on the same
# accounts, and a removed user's on an account nobody left.
#
# Setup: hpc-bio (alice bob carol erin) and hpc-geo (alice bob carol);
# carol joins hpc-chem too. Change: bob and carol leave hpc-bio and hpc-geo.
# bob is then in no mapped group (his landing association goes too);
# carol keeps chem and the landing account. The pairs bob@bio, bob@geo,
# carol@bio, carol@geo are one cross product: one command for two accounts.
# bob's last association (scim-landing) goes with the user itself, in its
# own command (`delete user where name=bob cluster=...`): it could not join
# the batch anyway, carol@scim-landing stays.

config false
admin POST groups '{"displayName": "hpc-bio", "gidNumber": 31060, "members": ["alice", "bob", "carol", "erin"]}' || bad "batch: add hpc-bio"
admin POST groups '{"displayName": "hpc-geo", "gidNumber": 31061, "members": ["alice", "bob", "carol"]}' || bad "batch: add hpc-geo"
admin POST groups/hpc-chem/members '{"add": ["carol"]}' || bad "batch: add carol to hpc-chem"
check "batch: sync after hpc-bio and hpc-geo appeared" sync_once
check "batch: apply the new accounts and members" apply
batch_view() { # account|user of the users and accounts this section touches
  sacctmgr -nP show assoc where cluster=$CLUSTER account=bio,geo,chem,scim-landing format=account,user |
    grep -E '^(bio|geo)\||\|(alice|bob|carol|erin)$' | LC_ALL=C sort
}
expect_eq "batch: before the change, bio/geo/chem/landing hold the setup's associations" "bio|
bio|alice
bio|bob
bio|carol
bio|erin
chem|alice
chem|carol
geo|
geo|alice
geo|bob
geo|carol
scim-landing|alice
scim-landing|bob
scim-landing|carol
scim-landing|erin" "$(batch_view)"

admin POST groups/hpc-bio/members '{"remove": ["bob", "carol"]}' || bad "batch: remove bob, carol from hpc-bio"
admin POST groups/hpc-geo/members '{"remove": ["bob", "carol"]}' || bad "batch: remove bob, carol from hpc-geo"
check "batch: sync after bob and carol left hpc-bio and hpc-geo" sync_once
BPLAN=$(syncd slurm plan 2>> "$T/syncd.log")
DELETES=$(grep -E '^sacctmgr -i delete user ' <<<"$BPLAN" | LC_ALL=C sort)
expect_eq "batch: plan deletes bob,carol on bio,geo in one command, and bob (last association) as a user" \
  "sacctmgr -i delete user where name=bob cluster=$CLUSTER
sacctmgr -i delete user where name=bob,carol account=bio,geo cluster=$CLUSTER" "$DELETES"
# Association deletes (those naming accounts): fewer commands than accounts.
ADELETES=$(grep -F ' account=' <<<"$DELETES")
n_del=$(grep -c . <<<"$ADELETES")
n_acct=$(grep -oE 'account=[^ ]*' <<<"$ADELETES" | cut -d= -f2 | tr ',' '\n' | sort -u | grep -c .)
if [ "$n_del" -ge 1 ] && [ "$n_del" -lt "$n_acct" ]; then ok "batch: $n_del association delete command(s) for $n_acct accounts"
else bad "batch: $n_del association delete command(s) for $n_acct accounts (not batched):"; echo "$BPLAN" | grep -v '^$' | head -20; fi
check "batch: apply the removals" apply
expect_eq "batch: after the pass, alice and erin keep bio/geo, carol keeps chem and landing, bob has none" "bio|
bio|alice
bio|erin
chem|alice
chem|carol
geo|
geo|alice
scim-landing|alice
scim-landing|carol
scim-landing|erin" "$(batch_view)"
expect_eq "batch: bob has no association left anywhere" "" "$(assocs user=bob)"
expect_eq "batch: the snapshot has carol on chem and landing only (C reader)" "chem
scim-landing" "$(snap_assoc carol | cut -d'|' -f1)"
check "batch: apply again" apply
expect_eq "batch: the next pass changes nothing" "# applied 0 command(s), 0 changed something" \
  "$(tail -1 "$T/apply.out" | sed 's/; [0-9]* sacctmgr.*//')"
config true
