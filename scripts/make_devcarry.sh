#!/usr/bin/env bash
# Fills .devcarry/ (ignored by git, named in the device tool's `carry`) with the libraries the
# GPU machine's image lacks, taken from this Debian machine's packages (scripts/setup_debian.sh):
#   boost/   Boost.program_options: the static library and the headers it includes (the
#            image has Boost 1.83's headers but not this library; mixing versions is not safe)
#   metis/   libmetis.so(.5) and metis.h (the image has no METIS)
#   hdf5/    parallel HDF5 (OpenMPI): the shared library (its own dependencies, zlib, szip, curl,
#            crypto, libmpi.so.40, are in the image), its headers and an h5pcc stand-in
#            that answers FindHDF5's -show / -showconfig with the carried paths (the image has
#            only serial HDF5, and result files are written with MPI-IO)
# scripts/device_check.sh points CMake at whichever of these exist. About 20 MiB in all.
#
#   scripts/make_devcarry.sh        (from anywhere; writes <repo>/.devcarry)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
D=$SRC/.devcarry
LIB=/usr/lib/x86_64-linux-gnu
rm -rf "$D"
mkdir -p "$D/boost/lib" "$D/boost/include" "$D/metis/lib" "$D/metis/include" "$D/hdf5/lib" "$D/hdf5/bin"
grep -qxF '/.devcarry/' "$SRC/.git/info/exclude" 2>/dev/null || { mkdir -p "$SRC/.git/info"; echo '/.devcarry/' >> "$SRC/.git/info/exclude"; }

# Boost.program_options: the archive and exactly the headers it pulls in.
cp "$LIB/libboost_program_options.a" "$D/boost/lib/"
echo '#include <boost/program_options.hpp>' > "$D/po.cpp"
g++ -std=c++17 -M "$D/po.cpp" | tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u |
  while read -r f; do
    rel=${f#/usr/include/}
    mkdir -p "$D/boost/include/$(dirname "$rel")"
    cp "$f" "$D/boost/include/$rel"
  done
rm -f "$D/po.cpp"

# METIS: the shared library under both names (the link name and the soname).
cp "$(readlink -f "$LIB/libmetis.so")" "$D/metis/lib/libmetis.so"
cp "$D/metis/lib/libmetis.so" "$D/metis/lib/libmetis.so.5"
cp /usr/include/metis.h "$D/metis/include/"

# Parallel HDF5: the shared library under its link name and its soname (a static archive would
# need its dependencies on the link line, which the hdf5::hdf5 target of newer CMakes omits).
H5SO=$(readlink -f "$LIB/libhdf5_openmpi.so")
cp "$H5SO" "$D/hdf5/lib/libhdf5.so"
cp "$H5SO" "$D/hdf5/lib/$(objdump -p "$H5SO" | awk '/SONAME/ {print $2}')"
cp -r /usr/include/hdf5/openmpi "$D/hdf5/include"
version=$(h5pcc -showconfig | sed -n 's/^ *HDF5 Version: *//p')
cat > "$D/hdf5/bin/h5pcc" <<EOF
#!/bin/sh
# h5pcc stand-in for the carried parallel HDF5 $version (scripts/make_devcarry.sh)
H=\$(cd "\$(dirname "\$0")/.." && pwd)
case "\$1" in
  -show) echo "mpicc -I\$H/include -L\$H/lib -lhdf5" ;;
  -showconfig) printf '            HDF5 Version: %s\n           Parallel HDF5: yes\n' "$version" ;;
  *) exec mpicc -I"\$H/include" "\$@" -L"\$H/lib" -lhdf5 -Wl,-rpath,"\$H/lib" ;;
esac
EOF
chmod +x "$D/hdf5/bin/h5pcc"
du -sh "$D"
