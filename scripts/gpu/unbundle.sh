# Sourced on the GPU machine by the scripts of scripts/gpu: unpacks what bundle.sh packed
# (bubblewrap's .deb into /tmp/bw; the shared libraries from .device/lib.tar.xz into
# .device/lib, once) and exports KZOO_BWRAP and LD_LIBRARY_PATH. The libraries travel
# xz-compressed because the device tool carries at most 64 MiB and ICU's data alone (pulled in
# through libpq) is 31 MB.
if [ ! -d .device/lib ] && [ -f .device/lib.tar.xz ]; then
  tar -xJf .device/lib.tar.xz -C .device || { echo "unbundle.sh: .device/lib.tar.xz did not unpack" >&2; exit 2; }
fi
if ls .device/bubblewrap_*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/bw && dpkg -x .device/bubblewrap_*.deb /tmp/bw && export KZOO_BWRAP=/tmp/bw/usr/bin/bwrap
fi
export LD_LIBRARY_PATH=$PWD/.device/lib
