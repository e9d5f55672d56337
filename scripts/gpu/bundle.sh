#!/usr/bin/env bash
# Prepares .device/ (git-ignored) for a GPU machine that has no Debian libraries and no
# bubblewrap (docs/GPU.md): the kzoo binary built here, stripped; the shared libraries
# `ldd` lists, glibc's own left out (the machine's glibc is newer); Debian's bubblewrap .deb,
# unpacked there with dpkg -x (scripts/gpu/unbundle.sh); and the commit it was built from. Run after scripts/build.sh.
#   usage: bash scripts/gpu/bundle.sh   then carry .device with the device call
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/kzoo ] || { echo "bundle.sh: build/kzoo is missing: run scripts/build.sh first" >&2; exit 2; }
rm -rf .device && mkdir -p .device/bin .device/lib
strip -o .device/bin/kzoo build/kzoo
ldd build/kzoo | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libresolv.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) ;;
    *) cp -L "$lib" .device/lib/ ;;
  esac
done
# xz: the device tool carries at most 64 MiB with the working tree; unbundle.sh unpacks it there
tar -cJf .device/lib.tar.xz -C .device lib && rm -rf .device/lib
(cd .device && apt-get download bubblewrap >/dev/null 2>&1) || {
  echo "bundle.sh: apt-get download bubblewrap failed (run apt-get update first)" >&2; exit 2; }
git rev-parse HEAD > .device/COMMIT
git status --porcelain --untracked-files=no | grep -q . && echo dirty >> .device/COMMIT
du -sh .device | awk '{print "bundle.sh: .device is " $1 " (commit " "'"$(git rev-parse --short HEAD)"'" ")"}'
