#!/usr/bin/env bash
# resolved_width_test.sh KPM_DOS: issue 31, one effective block width (app/cli/resolved_run.hpp).
# An LDOS or A(k, E) run sweeps min(R, traced columns) columns at once; its operator
# (--matrix auto), SELL chunk height (--sell-C auto) and its --plan are chosen for that
# width, not for --vectors, and /kpm/block_width records it.
set -u
dos="$1"
source "$(dirname "$0")/../support/script_lib.sh"
export OMP_NUM_THREADS=1

# --ldos of one row at the default R = 16 sweeps W = 1: SELL's chunk height for W = 1 is 16.
"$dos" --lattice 6x6x4 --moments 32 --ldos 0 --matrix sell -o "$work/l1.h5" > "$work/l1.txt" 2>&1
check "ldos of 1 row: exit 0" "[ $? -eq 0 ]"
check "ldos of 1 row: SELL chunk height 16, the one for W = 1" "grep -q 'operator    : sell-16-' '$work/l1.txt'"
check "ldos of 1 row: moments swept 1 column wide" "grep -q 'sweeps of width 1 ' '$work/l1.txt'"

# graphene --ldos of 3 rows: --matrix auto picks for W = 3 (real-valued sell; the two-sweep
# stencil is the fastest only at W = 2, 4, 8, 16, 32), not for R = 16.
"$dos" --model graphene --lattice 6x6 --moments 32 --ldos 0,1,2 -o "$work/l3.h5" > "$work/l3.txt" 2>&1
check "graphene ldos of 3 rows: exit 0" "[ $? -eq 0 ]"
check "graphene ldos of 3 rows: --matrix auto chose for W = 3" \
  "grep -q 'operator    : sell-8-256-tiled-real.*--matrix auto: sell with real values.*R = 3)' '$work/l3.txt'"
if /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
  check "graphene ldos of 3 rows: /kpm block_width = 3" \
    "[ \"\$(/usr/bin/python3 -c 'import h5py,sys; print(h5py.File(sys.argv[1])[\"kpm\"].attrs[\"block_width\"])' '$work/l3.h5')\" = 3 ]"
else
  echo "SKIPPED: /kpm block_width read-back (/usr/bin/python3 has no h5py)"
fi

# --plan of an LDOS of 2 rows plans 2 columns swept 2 wide: the same line as the DOS plan of
# R = 2 (the same operator, rows, halo and width), not the R = 16 one.
plan_line() { "$dos" --lattice 8x8x4 --matrix sell --plan --ranks 2 --plan-bandwidth 10 --memory-limit 1 "$@" 2>&1 | grep '^0 cpu'; }
ldos_plan=$(plan_line --ldos 0,1); dos2_plan=$(plan_line --vectors 2); dos16_plan=$(plan_line --vectors 16)
check "--plan --ldos 0,1 prices W = 2 as the run sweeps ('$ldos_plan')" \
  "[ -n \"\$ldos_plan\" ] && [ \"\$ldos_plan\" = \"\$dos2_plan\" ] && [ \"\$ldos_plan\" != \"\$dos16_plan\" ]"
# --k-points of 1 momentum on ti 8x8x4: S = 4 Nz = 16 plane waves, at most R = 4 per sweep.
kp_plan=$(plan_line --k-points 0,0 --vectors 4); dos_w4=$(plan_line --vectors 16 --block-width 4)
check "--plan --k-points prices 16 columns 4 wide, as the run" "[ -n \"\$kp_plan\" ] && [ \"\$kp_plan\" = \"\$dos_w4\" ]"
exit $fail
