#!/usr/bin/env bash
# kpm-plot renders every kind of result to an image of the documented size: the DOS with
# its error band, LDOS curves, the surface LDOS map and A(k, E) with bands; bad input fails.
set -u
dos="$1"; plot="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
if ! /usr/bin/python3 -c 'import h5py, matplotlib' 2>/dev/null; then
  echo "SKIPPED: /usr/bin/python3 lacks h5py or matplotlib"; exit 0
fi
size() { /usr/bin/python3 -c "import struct,sys; d=open(sys.argv[1],'rb').read(24); assert d[:8]==b'\x89PNG\r\n\x1a\n'; print('%dx%d' % struct.unpack('>II', d[16:24]))" "$1"; }
common=(--model ti --moments 64 --quiet)
"$dos" "${common[@]}" --lattice 6x6x4 --disorder 1 --realizations 3 --vectors 2 --output "$work/dos.h5" > /dev/null
"$dos" "${common[@]}" --lattice 6x6x4 --ldos 0-7 --output "$work/ldos.h5" > /dev/null
"$dos" "${common[@]}" --lattice 6x6x4 --ldos layer:0 --ldos-map-energy 0.5 --output "$work/map.h5" > /dev/null
"$dos" "${common[@]}" --lattice 6x6x4 --k-path M-G-X --output "$work/spectral.h5" > /dev/null
"$dos" --model graphene --lattice 6x6 --moments 64 --quiet --k-path G-K-M-G --output "$work/graphene.h5" > /dev/null
for case in "dos dos 800x500" "ldos ldos 800x500" "map map 1000x450" "spectral spectral 800x600" "graphene spectral 800x600"; do
  set -- $case
  "$plot" "$work/$1.h5" --kind "$2" -o "$work/$1.png" > "$work/$1.txt" 2>&1
  check "$1: kpm-plot exits 0" "[ $? -eq 0 ]"
  check "$1: PNG non-empty" "[ -s '$work/$1.png' ]"
  check "$1: PNG is $3" "[ \"\$(size '$work/$1.png')\" = '$3' ]"
done
"$plot" "$work/map.h5" -o "$work/auto.svg" > /dev/null 2>&1
check "default kind and SVG output" "[ $? -eq 0 ] && grep -q '<svg' '$work/auto.svg'"
"$plot" "$work/dos.h5" --kind spectral -o "$work/none.png" > "$work/bad.txt" 2>&1
check "missing kind is an error naming what the file has" "[ $? -ne 0 ] && grep -q 'has no spectral data' '$work/bad.txt'"
"$plot" "$work/nothing.h5" > "$work/bad.txt" 2>&1
check "unreadable file is an error" "[ $? -ne 0 ] && grep -q 'cannot read' '$work/bad.txt'"
exit $fail
