#!/usr/bin/env bash
# docs/format.md describes the files the programs write today: small runs of every kind
# (DOS with an ensemble, a field with its conductivity, a slab with an exchange mass, an hr model with positions in a field, LDOS with its map and --green, A(k,E) clean and with error bars,
# kpm-eigs dense and shift-invert, a checkpoint left by SIGTERM) are read with h5py and
# compared with the document by format_doc_check.py, both ways.
set -u
dos="$1"; eigs="$2"; src="$3"
source "$(dirname "$0")/../support/script_lib.sh"
if ! /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
  echo "SKIPPED: /usr/bin/python3 has no h5py, docs/format.md not checked"; exit 77
fi
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
run() { local name="$1"; shift; if ! "$@" --quiet > "$work/$name.txt" 2>&1; then echo "FAIL: $name: $*"; cat "$work/$name.txt"; fail=1; fi; }

run dos  "$dos" --config "$src/inputs/test/ti_tiny.ini" --output "$work/dos.h5"
run real "$dos" --model graphene --lattice 16x16 --moments 64 --vectors 2 --realizations 3 --disorder 0.5 --output "$work/real.h5"
run field "$dos" --model graphene --lattice 16x16 --magnetic-flux 1/16 --moments 64 --vectors 2 --conductivity xy --output "$work/field.h5"
run qah  "$dos" --model ti --lattice 6x6x3 --exchange-mass 0.5 --moments 32 --vectors 2 --conductivity xy --matrix free --output "$work/qah.h5"
printf '0 0 0\n0 1 0\n' > "$work/AB.txt"
run hr "$dos" --model hr --model-file "$src/inputs/graphene_hr.dat" --lattice 8x8 --cell-vectors "1.7320508075688772,0,0;0.8660254037844386,1.5,0" --orbital-positions "$work/AB.txt" --magnetic-flux 1/8 --moments 64 --vectors 2 --output "$work/hr.h5"
run ldos "$dos" --model ti --lattice 8x8x4 --ldos site:4,4,0 --moments 64 --green 0.05 --energy-grid -1:1:11 --output "$work/ldos.h5"
run map  "$dos" --model ti --lattice 8x8x4 --ldos layer:0 --ldos-map-energy 0.1 --moments 64 --realizations 2 --disorder 0.5 --output "$work/map.h5"
run probe "$dos" --model ti --lattice 8x8x4 --ldos layer:0 --ldos-map-energy 0.1 --moments 64 --ldos-method probing --probing-distance 2 --output "$work/probe.h5"
run ak   "$dos" --model ti --lattice 8x8x4 --k-path M-G-X --moments 64 --vectors 8 --output "$work/ak.h5"
run ak2  "$dos" --model ti --lattice 8x8x4 --k-points "0,0;1,1" --moments 32 --realizations 2 --disorder 0.5 --output "$work/ak2.h5"
run eigs "$eigs" --model graphene --lattice 8x8 --shift 0 --count 4 --method dense --save-vectors --output "$work/eigs.h5"
run si   "$eigs" --model ti --lattice 6x6x4 --shift 0.1 --count 4 --method shift-invert --output "$work/si.h5"

# A checkpoint as a stopped run leaves it (exit 75).
"$dos" --model ti --lattice 24x24x12 --moments 4000 --vectors 8 --energy-range -6:6 --output "$work/part.h5" \
    --checkpoint "$work/ck.h5" --checkpoint-every 0.2 > "$work/ck.txt" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -e "$work/ck.h5" ] && break; sleep 0.05; done
sleep 0.3
kill -TERM "$pid"
wait "$pid"; rc=$?
if [ "$rc" -ne 75 ] || [ ! -e "$work/ck.h5" ]; then echo "FAIL: the stopped run exited $rc without a checkpoint"; fail=1; fi

[ "$fail" -eq 0 ] || exit 1
/usr/bin/python3 "$src/tests/integration/format_doc_check.py" "$src/docs/format.md" "$work"/*.h5
