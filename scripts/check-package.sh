#!/usr/bin/env bash
# CI check of the Debian package and of `cmake --install` (scripts/test.sh runs it):
#  1. scripts/package.sh builds the .deb; dpkg-deb shows it holds the binary, the unit,
#     the tmpfiles snippet, the config (declared a conffile), the man page and the three
#     completions, and that it declares its runtime libraries;
#  2. dpkg installs it into a scratch root (--root: its maintainer scripts leave this
#     system alone), `kstate version` runs from there, and an upgrade to a package
#     whose shipped config changed keeps the edited one (dpkg's conffile rule);
#  3. `cmake --install` into a scratch DESTDIR twice keeps an edited config.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "check-package: $*" >&2; exit 1; }
deb=$(scripts/package.sh | tail -n1)
work=$(mktemp -d /tmp/kstate-package.XXXXXX)
trap 'rm -rf "$work"' EXIT

# 1. Contents, conffiles, dependencies.
contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for path in ./usr/bin/kstate ./usr/lib/systemd/system/kstate.service ./usr/lib/tmpfiles.d/kstate.conf \
  ./etc/kstate/config.yaml ./usr/share/man/man1/kstate.1.gz ./usr/share/bash-completion/completions/kstate \
  ./usr/share/zsh/vendor-completions/_kstate ./usr/share/fish/vendor_completions.d/kstate.fish \
  ./usr/share/doc/kstate/README.md; do
  grep -qx "$path" <<<"$contents" || fail "$deb lacks $path"
done
dpkg-deb -e "$deb" "$work/control"
[[ $(cat "$work/control/conffiles") == /etc/kstate/config.yaml ]] || fail "conffiles: $(cat "$work/control/conffiles")"
depends=$(dpkg-deb -f "$deb" Depends)
for library in libc6 libssl3 libyaml-cpp0.7 libspdlog1 libstdc++6 libsystemd0; do
  grep -q "$library" <<<"$depends" || fail "Depends lacks $library: $depends"
done
grep -q 'ExecStart=/usr/bin/kstate daemon --config /etc/kstate/config.yaml' \
  <(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/lib/systemd/system/kstate.service) || fail "ExecStart paths"

# 2. Install into a scratch root, run it, upgrade with an edited config.
root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
install_deb() {
  dpkg --root="$root" --force-script-chrootless --force-depends --force-confdef --force-confold \
    --log=/dev/null -i "$1" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -i $1"; }
}
install_deb "$deb"
"$root/usr/bin/kstate" version | grep -q "^kstate " || fail "kstate version from the scratch root"
echo "# edited by the administrator" >>"$root/etc/kstate/config.yaml"
dpkg-deb -R "$deb" "$work/next"
sed -i 's/^Version: .*/&+next/' "$work/next/DEBIAN/control"
echo "# a later release's new comment" >>"$work/next/etc/kstate/config.yaml"
dpkg-deb -b "$work/next" "$work/next.deb" >/dev/null
install_deb "$work/next.deb"
grep -q "edited by the administrator" "$root/etc/kstate/config.yaml" || fail "the upgrade overwrote the edited config"
[[ -f $root/etc/kstate/config.yaml.dpkg-dist ]] || fail "the upgrade's config was not kept as .dpkg-dist"

# 3. cmake --install keeps an edited config too.
DESTDIR="$work/destdir" cmake --install build >/dev/null
echo "# edited" >>"$work/destdir/etc/kstate/config.yaml"
again=$(DESTDIR="$work/destdir" cmake --install build)
grep -q "Kept: $work/destdir/etc/kstate/config.yaml" <<<"$again" || fail "cmake --install did not say it kept the config"
grep -q "^# edited" "$work/destdir/etc/kstate/config.yaml" || fail "cmake --install overwrote the edited config"
cmp -s systemd/config.yaml "$work/destdir/usr/share/doc/kstate/config.yaml" || fail "the shipped config's copy"
echo "check-package: $deb ($(du -k "$deb" | cut -f1) kB): contents, conffiles, dependencies, scratch-root install," \
  "upgrade and cmake --install all as expected"
