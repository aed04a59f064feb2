#!/usr/bin/env bash
# The CPU roofline proof of docs/performance.md (issue 4), reproduced with one command:
#
#   scripts/bench_cpu.sh
#
# 1. builds (Release) with scripts/build.sh in ./build, or $TOPOKPM_BUILD_DIR;
# 2. runs spmmv-bench $TOPOKPM_BENCH_RUNS times (default 3; each: triad b at start and end,
#    SELL-C-sigma scan, in-cache P_LLC, every operator at R = 1..32 -- naive, sell-32,
#    sell-8, their cache-blocked sweep orders sell-32t and sell-8t, free -- median of
#    $TOPOKPM_BENCH_REPS sweeps, default 9), raw output in <build>/perf/;
#    TOPOKPM_BENCH_ARGS adds spmmv-bench options (default "--interleave": every (R, op) pair
#    alternates within each repetition, so A/B and R = 32 vs R = 1 see the same load);
# 3. runs kpm-dos on inputs/bench/ti_64x64x40_R32.ini (ti 64x64x40, M = 2048, R = 32) and
#    records its wall time and the fraction spent in the kernel (its "moments" phase);
#    then the same run with --block-width 8, --precision single and both (the kpm-dos table
#    of docs/performance.md; TOPOKPM_BENCH_KPM_VARIANTS=0 skips them);
# 4. bench/plot_roofline.py merges everything (medians over the runs) into
#    docs/perf/cpu_spmmv.json, docs/perf/cpu_table.md and docs/perf/roofline.png.
#
# Threads: OMP_NUM_THREADS (default: all CPUs). About 10-12 minutes on 2 cores after the
# build; other processes on the machine slow it down and show up as noise (the benchmark
# records the load average).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${TOPOKPM_BUILD_DIR:-build}"
runs="${TOPOKPM_BENCH_RUNS:-3}"
reps="${TOPOKPM_BENCH_REPS:-9}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}"
python=/usr/bin/python3

scripts/build.sh
raw="$build_dir/perf"
out=docs/perf
mkdir -p "$raw" "$out"

jsons=()
for i in $(seq 1 "$runs"); do
    echo "== spmmv-bench run $i/$runs (OMP_NUM_THREADS=$OMP_NUM_THREADS, $reps reps) =="
    # shellcheck disable=SC2086
    "$build_dir/bench/spmmv-bench" --reps "$reps" --triad-reps 20 ${TOPOKPM_BENCH_ARGS---interleave} --json "$raw/spmmv_run$i.json" \
        | tee "$raw/spmmv_run$i.txt"
    jsons+=("$raw/spmmv_run$i.json")
done

echo "== kpm-dos: ti 64x64x40, M = 2048, R = 32 =="
kpm_cmd="kpm-dos --config inputs/bench/ti_64x64x40_R32.ini"
t0=$(date +%s.%N)
"$build_dir/app/kpm-dos" --config inputs/bench/ti_64x64x40_R32.ini --output "$raw/ti_64x64x40_R32.h5" \
    2>&1 | tee "$raw/kpm_dos.txt"
t1=$(date +%s.%N)
wall=$($python -c "print(round($t1 - $t0, 3))")
echo "kpm-dos wall time: $wall s"
if [ "${TOPOKPM_BENCH_KPM_VARIANTS:-1}" != 0 ]; then
    for variant in "--block-width 8" "--precision single" "--precision single --block-width 8"; do
        echo "== kpm-dos: the same with $variant =="
        tag=$(echo "$variant" | tr -d ' -')
        t0=$(date +%s.%N)
        # shellcheck disable=SC2086
        "$build_dir/app/kpm-dos" --config inputs/bench/ti_64x64x40_R32.ini $variant \
            --output "$raw/ti_64x64x40_R32_$tag.h5" > "$raw/kpm_dos_$tag.txt" 2>&1
        t1=$(date +%s.%N)
        grep -E "operator    :|moments     :|time        :" "$raw/kpm_dos_$tag.txt"
        echo "wall time: $($python -c "print(round($t1 - $t0, 3))") s"
    done
fi

$python bench/plot_roofline.py --runs "${jsons[@]}" --kpm-log "$raw/kpm_dos.txt" --kpm-wall "$wall" \
    --kpm-command "$kpm_cmd" --out-dir "$out"
cat "$out/cpu_table.md"
