#!/usr/bin/env bash
# operator_cost_test.sh KPM_DOS: issue 31, one pricing of the operator (operator_cost in
# app/cli/operator_choice.hpp). A real-valued model's stored operator (graphene, sell on the
# CPU) holds 8 + 4 = 12 bytes per entry, not the 16 + 4 of complex values: the run's memory
# estimate and --plan both price it so.
set -u
dos="$1"
source "$(dirname "$0")/../support/script_lib.sh"
export OMP_NUM_THREADS=1
# graphene 64x64: N = 8192 rows, 4 stored entries per row (3 hoppings + the diagonal) =
# 32768 entries; 12 bytes each = 393216 B = 384.0 KiB.
"$dos" --model graphene --lattice 64x64 --matrix sell --vectors 2 --moments 32 -o "$work/g.h5" > "$work/run.txt" 2>&1
check "the run exits 0" "[ $? -eq 0 ]"
check "the run stores real values (sell ...-real)" "grep -q 'operator    : sell-8-256-tiled-real' '$work/run.txt'"
check "the memory estimate prices 12 bytes per entry: matrix 384.0 KiB" "grep -q 'memory      : .*(matrix 384.0 KiB,' '$work/run.txt'"
# --plan on 2 ranks, R = 2: 4096 rows and 16384 entries per rank; sweep bytes
# 12 x 16384 + 3 x 16 x 4096 x 2 = 196608 + 393216 = 589824 B = 0.5625 MiB (printed 0.562).
row=$("$dos" --model graphene --lattice 64x64 --matrix sell --vectors 2 --plan --ranks 2 --plan-bandwidth 10 \
      --memory-limit 1 2>&1 | grep '^0 cpu')
check "--plan prices 12 bytes per entry: 0.562 MiB per sweep ($row)" "grep -q ' 0.562\$' <<<\"\$row\""
exit $fail
