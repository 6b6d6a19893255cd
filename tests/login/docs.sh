# tests/login/docs.sh: sourced by tests/login/run.sh. The PAM and sshd
# lines an admin copies from the docs are the ones this suite runs, and
# none of them skips later account modules or locks out local key files.

echo "--- the documented PAM and sshd lines"
readme_pam=$(grep -hE '^account +[^ ]+ +pam_scim\.so allow_groups=' "$ROOT/README.md" | head -1)
expect_eq "README's sshd account line is the one the sshd test stack runs" "$readme_pam" \
  "$(grep -E '^account +[^ ]+ +pam_scim\.so' "$SS/etc/pam.d/sshd" | tr -s ' ')"
bad_lines=$(grep -hnE '^[^`]*account +\[[^]]*success=done[^]]*\] +pam_scim' "$ROOT/README.md" "$ROOT/pam/README.md" \
  "$ROOT/packaging/man/pam_scim.8" "$ROOT/packaging/deb/postinst" "$ROOT/packaging/pam-config")
expect_eq "no documented pam_scim line uses success=done (it skips later account modules)" "" "$bad_lines"
expect_eq "pam-auth-update profile: pam_scim required, as the README says" "required pam_scim.so" \
  "$(awk '/^Account:/ {f=1; next} f && NF {print $1, $2; exit}' "$ROOT/packaging/pam-config")"
# AuthorizedKeysFile none appears only indented, inside a Match block.
expect_eq "no documented sshd snippet sets AuthorizedKeysFile none globally" "" \
  "$(grep -hnE '^AuthorizedKeysFile +none' "$ROOT/README.md" "$ROOT/pam/README.md" "$ROOT/packaging/man/"*.8)"
