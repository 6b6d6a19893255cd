#!/usr/bin/env bash
# packaging/deb/build.sh BUILD VERSION: builds BUILD/scimbridge_<v>_<arch>.deb
# with dpkg-deb from exactly what `make install` puts in a staging root.
#
# Decisions (see also packaging/deb/postinst):
# - No conffiles. The package ships nothing in /etc but the empty
#   /etc/scimbridge directory: the example config is documentation
#   (/usr/share/doc/scimbridge/examples, refreshed on every upgrade), and
#   the admin's syncd.toml is never the package's, so dpkg never prompts
#   about it and never removes it.
# - The systemd unit is in /lib/systemd/system, not a conffile: site
#   changes go in a drop-in (systemctl edit), which upgrades never touch.
# - Depends comes from dpkg-shlibdeps on the shipped ELF files, so the
#   minimum versions are the ones these binaries really need.
set -euo pipefail

build=$(cd "$1" && pwd) version=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
pkgdir=$root/packaging/deb
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
plugindir=/usr/lib/$multiarch/slurm-wlm

# A Debian version must start with a digit: v1.2.3-4-gabc -> 1.2.3+4.gabc;
# an untagged tree (git describe gives a bare hash) -> 0.0~git.HASH.
v=${version#v}
v=$(printf '%s' "$v" | tr -c 'A-Za-z0-9.+~\n' '.' | tr '-' '.')
# (A bare hash may start with a digit too: only a dotted number is a tag.)
if [[ $v =~ ^[0-9]+(\.[0-9]+)+ ]]; then
  v=$(printf '%s' "$v" | sed -E 's/^([0-9][0-9.]*)\.([0-9]+)\.g/\1+\2.g/; s/\.dirty$/+dirty/')
else
  v=0.0~git.$(printf %s "$v" | sed -E 's/\.dirty$/+dirty/')
fi

stage=$build/deb-root
rm -rf "$stage"
mkdir -p "$stage"
# The layout is the Debian one whatever the build host has (a source
# build of Slurm elsewhere does not move Debian's PluginDir).
make -C "$root" --no-print-directory install DESTDIR="$stage" PREFIX=/usr \
  NSSDIR=/lib/"$multiarch" PAMDIR=/lib/"$multiarch"/security SLURM_PLUGINDIR="$plugindir" \
  UNITDIR=/lib/systemd/system BUILD="$build" VERSION="$version" >/dev/null

# Depends: from the ELF files' NEEDED entries (spank_scim.so's Slurm
# symbols come from the host process, so Slurm is only suggested).
elfs=()
while IFS= read -r f; do
  if head -c 4 "$f" | grep -q 'ELF'; then elfs+=("$f"); fi
done < <(find "$stage" -type f)
# Debian ships stripped objects (debug info would double the size); the
# modules keep their dynamic symbol tables, which is all dlopen needs.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "${elfs[@]}"

depends=""
if command -v dpkg-shlibdeps >/dev/null; then
  tmp=$(mktemp -d)
  mkdir "$tmp/debian"
  printf 'Source: scimbridge\n\nPackage: scimbridge\nArchitecture: any\n' > "$tmp/debian/control"
  depends=$(cd "$tmp" && dpkg-shlibdeps -O --warnings=0 "${elfs[@]}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p') || true
  rm -rf "$tmp"
fi
# Fallback when dpkg-dev is absent: the versions bookworm's symbols files give.
[ -n "$depends" ] || depends="libc6 (>= 2.34), libpam0g (>= 0.99.7.1), libsqlite3-0 (>= 3.35.0)"

# The SPANK plugin loads only into the Slurm release it was built for:
# Slurm's plugin loader refuses a plugin whose plugin_version (the
# SLURM_VERSION_NUMBER of the headers it was built with) differs in major
# or minor, and then every job fails on a "required" plugin. So Breaks
# keeps this package off any other Slurm release (slurmd, slurmctld and
# slurm-client all depend on slurm-wlm-basic-plugins of their own
# version). Breaks, not Depends: nodes without Slurm (login or NFS
# nodes using only NSS/PAM) install the package without it. The release
# comes from the same header the plugin was compiled against.
slurmnum=$(printf '#include <slurm/slurm_version.h>\nSLURM_VERSION_NUMBER\n' |
  ${CC:-cc} -E -P -x c - 2>/dev/null | grep -Eo '0x[0-9a-fA-F]+' | tail -1) || true
breaks=""
if [ -n "$slurmnum" ]; then
  smaj=$(( (slurmnum >> 16) & 0xff )) smin=$(( (slurmnum >> 8) & 0xff ))
  srel=$(printf '%02d.%02d' "$smaj" "$smin")
  snext=$(printf '%02d.%02d' "$smaj" $((smin + 1)))
  breaks="slurm-wlm-basic-plugins (<< $srel~), slurm-wlm-basic-plugins (>= $snext~)"
else
  echo "build.sh: slurm/slurm_version.h not found: no Breaks for the SPANK plugin" >&2
fi

mkdir -m 0755 "$stage/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<EOF
Package: scimbridge
Version: $v
Architecture: $arch
Maintainer: scimbridge maintainers <scimbridge@users.noreply.github.com>
Installed-Size: $size
Depends: $depends
${breaks:+Breaks: $breaks
}Suggests: slurm-client, slurmd, quota, openssh-server
Section: admin
Priority: optional
Homepage: https://github.com/scimbridge/scimbridge
Description: SCIM 2.0 identities as Linux and Slurm accounts
 scimbridge turns the users and groups of a SCIM 2.0 identity provider
 into POSIX accounts and Slurm associations on HPC nodes. syncd polls the
 provider and writes a world-readable snapshot; the NSS module
 (libnss_scim.so.2), the PAM account module (pam_scim.so), the SPANK
 plugin (spank_scim.so) and the sshd AuthorizedKeysCommand (scim-keys)
 answer from that local file only, so logins and jobs never wait on the
 network. mylimits shows a user their accounts, QOS limits and jobs.
 .
 Installing changes no configuration: the postinst prints the lines to
 add to nsswitch.conf, PAM, sshd_config and plugstack.conf.
EOF
for s in postinst prerm postrm; do
  sed -e "s|@SLURM_PLUGINDIR@|$plugindir|g" "$pkgdir/$s" > "$stage/DEBIAN/$s"
  chmod 0755 "$stage/DEBIAN/$s"
done
# The loader cache is refreshed by libc-bin's ldconfig trigger after
# install and removal, instead of ldconfig in the maintainer scripts.
echo "activate-noawait ldconfig" > "$stage/DEBIAN/triggers"
chmod 0644 "$stage/DEBIAN/triggers"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
  xargs -0 md5sum) > "$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"

rm -f "$build"/scimbridge_*.deb
out=$build/scimbridge_${v}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
rm -rf "$stage"
echo "$out"
