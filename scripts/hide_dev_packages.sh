#!/usr/bin/env bash
# Runs a command with our Debian dev packages hidden, as on the device machine (which has none of
# them): in a private mount namespace, empty folders and empty files are bind-mounted over their
# headers, CMake package files, libraries and sources. Nothing outside the namespace changes.
#   scripts/hide_dev_packages.sh COMMAND [ARG...]      (root, or user namespaces: unshare -rm)
# scripts/device_dry_run.sh uses it to show that the full build fails without the carried tree.
set -euo pipefail
if [[ ${METRONOME_HIDDEN_NS:-} != 1 ]]; then
  ((EUID == 0)) && ns=(unshare -m --propagation private) || ns=(unshare -rm --propagation private)
  METRONOME_HIDDEN_NS=1 exec "${ns[@]}" "$0" "$@"
fi
a=/usr/lib/x86_64-linux-gnu
empty=$(mktemp -d)
hidden=0
for d in /usr/include/nlohmann /usr/include/CLI /usr/include/eigen3 /usr/include/fmt \
         /usr/include/benchmark /usr/include/gtest /usr/include/gmock /usr/src/googletest \
         /usr/src/gtest /usr/src/gmock /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 \
         /usr/share/eigen3 /usr/lib/cmake/eigen3 $a/cmake/fmt $a/cmake/benchmark $a/cmake/GTest \
         $a/cmake/GMock; do
  [[ -d $d ]] && mount --bind "$empty" "$d" && hidden=$((hidden + 1))
done
for f in $a/libfmt.* $a/libbenchmark* $a/libgtest* $a/libgmock* $a/pkgconfig/{fmt,benchmark,gtest,gmock,eigen3,nlohmann_json}*.pc; do
  [[ -f $f && ! -L $f ]] && mount --bind /dev/null "$f" && hidden=$((hidden + 1))
done
echo "hide_dev_packages: $hidden paths hidden (headers, CMake packages, libraries, sources)" >&2
exec "$@"
