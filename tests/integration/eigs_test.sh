#!/usr/bin/env bash
# kpm-eigs as a user runs it (models.md §6): every request and method (dense, lanczos,
# chebfd) against numpy's eigvalsh of the matrix kpm-dos exports (independent reference),
# the in-gap Dirac states
# of a clean slab on its surfaces, an empty window, 1-3 MPI ranks equal to one, and every
# impossible request refused with a message naming the option and no file left.
set -u
eigs="$1"; dos="$2"; plot="$3"; mpiexec="${4:-}"
source "$(dirname "$0")/../support/script_lib.sh"
checker="$(dirname "$0")/check_eigs.py"
export OMP_NUM_THREADS=1

help="$("$eigs" --help)"
for opt in window extremal shift count method tolerance save-vectors model lattice matrix output; do
  check "--help mentions --$opt" "grep -q -- '--$opt' <<<\"\$help\""
done

ti=(--model ti --lattice 4x4x4 --disorder 1.0 --dot-period 2 --dot-radius 1 --dot-potential 0.4)
"$dos" "${ti[@]}" --moments 16 --vectors 1 --output "$work/dos.h5" --export-matrix "$work/ti.mtx" -q > /dev/null
check "kpm-dos exports the reference matrix" "[ -s '$work/ti.mtx' ]"

run() {  # run NAME FILE ARGS...: kpm-eigs exits 0 and the file passes the checker's options in CHECK
  local name="$1" file="$2"; shift 2
  "$eigs" --output "$work/$file" "$@" > "$work/$file.txt" 2>&1
  check "$name: exit 0" "[ $? -eq 0 ]"
  check "$name: file checks out" "$py '$checker' '$work/$file' $CHECK > '$work/$file.check' 2>&1 || { cat '$work/$file.check'; false; }"
}
CHECK="--matrix $work/ti.mtx" run "lowest:6 lanczos" low.h5 "${ti[@]}" --extremal lowest:6 --method lanczos --save-vectors
CHECK="--matrix $work/ti.mtx" run "highest:5 lanczos" high.h5 "${ti[@]}" --extremal highest:5 --method lanczos
CHECK="--matrix $work/ti.mtx --same-as $work/low.h5" run "lowest:6 dense" lowd.h5 "${ti[@]}" --extremal lowest:6 --method dense --save-vectors
CHECK="--matrix $work/ti.mtx" run "window dense (auto)" win.h5 "${ti[@]}" --window -1:0.5 --save-vectors
CHECK="--matrix $work/ti.mtx" run "shift 0.2 count 5" shift.h5 "${ti[@]}" --shift 0.2 --count 5
# The block Chebyshev filter for extremal requests (auto's choice above the dense limit).
CHECK="--matrix $work/ti.mtx --same-as $work/low.h5" run "lowest:6 chebfd" lowc.h5 "${ti[@]}" --extremal lowest:6 --method chebfd --save-vectors
CHECK="--matrix $work/ti.mtx --same-as $work/high.h5" run "highest:5 chebfd" highc.h5 "${ti[@]}" --extremal highest:5 --method chebfd
check "extremal chebfd names its passes" "grep -q 'pair(s) by chebfd.*filter passes' '$work/lowc.h5.txt'"
CHECK="--matrix $work/ti.mtx" run "free operator" free.h5 "${ti[@]}" --extremal lowest:4 --method lanczos --matrix free
check "window run names its pairs" "grep -q 'pair(s) by dense' '$work/win.h5.txt'"
# ChebFD (issue 15): the same window as dense, against numpy and the dense run; graphene.
CHECK="--matrix $work/ti.mtx --same-as $work/win.h5" run "window chebfd" winc.h5 "${ti[@]}" --window -1:0.5 --method chebfd --save-vectors --progress-interval 0.001
check "chebfd run writes its filter degree" "$py -c \"import h5py,sys; a=h5py.File('$work/winc.h5')['/eigs'].attrs; sys.exit(not (a['filter_degree'] >= 15 and a['method'] in ('chebfd', b'chebfd')))\""
check "chebfd run prints its pass lines" "grep -q 'converged of' '$work/winc.h5.txt' && grep -q 'chebfd      : filter degree' '$work/winc.h5.txt'"
CHECK="" run "window chebfd on graphene" grac.h5 --model graphene --lattice 8x8 --dot-period 4 --dot-radius 1.5 --dot-potential 0.3 --window -0.6:0.6 --method chebfd
CHECK="--same-as $work/grac.h5" run "window dense on graphene" grad.h5 --model graphene --lattice 8x8 --dot-period 4 --dot-radius 1.5 --dot-potential 0.3 --window -0.6:0.6 --method dense
# Above the dense limit (N = 4608 > 4096) auto takes chebfd for a window.
CHECK="--surface-min 0.9" run "window auto above the dense limit" autoc.h5 --model ti --lattice 12x12x8 --dot-potential 0.4 --dot-period 4 --dot-radius 1.5 --window -0.3:0.3
check "auto picked chebfd" "grep -q 'pair(s) by chebfd' '$work/autoc.h5.txt'"

# Physics: the clean slab's in-gap states at the Dirac point live on its two surfaces.
CHECK="--surface-min 0.9" run "Dirac states of a clean slab" dirac.h5 --model ti --lattice 6x6x6 --window -0.3:0.3
check "Dirac states found" "[ \"\$($py -c \"import h5py; print(len(h5py.File('$work/dirac.h5')['/eigs/values']))\")\" -ge 2 ]"
# Periodic in all directions the clean bulk has a gap [-1, 1]: an empty window, said so.
CHECK="" run "empty window" empty.h5 --model ti --lattice 4x4x4 --boundary ppp --window -0.5:0.5
check "empty window is reported" "grep -q 'no eigenvalue in the window' '$work/empty.h5.txt'"
CHECK="" run "empty window chebfd" emptyc.h5 --model ti --lattice 4x4x4 --boundary ppp --window -0.5:0.5 --method chebfd
check "empty window chebfd is reported" "grep -q 'no eigenvalue in the window' '$work/emptyc.h5.txt'"
CHECK="" run "graphene sublattices" gra.h5 --model graphene --lattice 6x6 --extremal highest:3 --method lanczos

# kpm-plot draws eigenvalues against their surface weight, over a kpm-dos DOS of the same system.
"$dos" --model ti --lattice 6x6x6 --moments 64 --vectors 2 --output "$work/dirac_dos.h5" -q > /dev/null
check "kpm-plot draws an eigs file over a DOS" "'$plot' '$work/dirac.h5' --dos '$work/dirac_dos.h5' -o '$work/dirac.png' > /dev/null && [ -s '$work/dirac.png' ]"
check "kpm-plot draws a graphene eigs file" "'$plot' '$work/gra.h5' -o '$work/gra.png' > /dev/null && [ -s '$work/gra.png' ]"

bad() {  # bad NAME MUST_MENTION ARGS...
  local name="$1" mention="$2"; shift 2
  "$eigs" --output "$work/bad.h5" "$@" > "$work/bad.txt" 2>&1
  local rc=$?
  check "$name: exit 2" "[ $rc -eq 2 ]"
  check "$name: message names $mention" "grep -q -- '$mention' '$work/bad.txt' || { cat '$work/bad.txt'; false; }"
  check "$name: no output file" "[ ! -e '$work/bad.h5' ] && [ -z \"\$(ls '$work' | grep tmp)\" ]"
}
bad "no request" "exactly one request" "${ti[@]}"
bad "two requests" "exactly one request" "${ti[@]}" --window -1:1 --extremal lowest:2
bad "k > N" "--extremal" "${ti[@]}" --extremal lowest:300
bad "inverted window" "--window" "${ti[@]}" --window 1:-1
bad "window outside the spectrum" "outside the spectrum" "${ti[@]}" --window 20:30
bad "shift without count" "--count" "${ti[@]}" --shift 0
bad "lanczos for a window" "--method lanczos" "${ti[@]}" --window -1:1 --method lanczos
bad "chebfd for a shift request" "--method chebfd" "${ti[@]}" --shift 0.2 --count 2 --method chebfd
bad "shift-invert for --extremal" "--method shift-invert" "${ti[@]}" --extremal lowest:2 --method shift-invert
bad "bad method" "--method" "${ti[@]}" --extremal lowest:2 --method magic
bad "tolerance" "--tolerance" "${ti[@]}" --extremal lowest:2 --tolerance 0
bad "single precision" "--precision single" "${ti[@]}" --extremal lowest:2 --precision single
bad "gpu" "--device cuda" "${ti[@]}" --extremal lowest:2 --device cuda

if [ -n "$mpiexec" ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  for np in 2 3; do
    timeout 120 "$mpiexec" -np $np --bind-to none "$eigs" "${ti[@]}" --extremal lowest:6 --method lanczos \
      --output "$work/mpi$np.h5" > "$work/mpi$np.txt" 2>&1
    check "$np ranks lanczos: exit 0" "[ $? -eq 0 ] || { cat '$work/mpi$np.txt'; false; }"
    check "$np ranks lanczos equals 1 rank" "$py '$checker' '$work/mpi$np.h5' --same-as '$work/low.h5' --matrix '$work/ti.mtx'"
    timeout 120 "$mpiexec" -np $np --bind-to none "$eigs" "${ti[@]}" --extremal lowest:6 --method chebfd \
      --output "$work/mpie$np.h5" > "$work/mpie$np.txt" 2>&1
    check "$np ranks extremal chebfd: exit 0" "[ $? -eq 0 ] || { cat '$work/mpie$np.txt'; false; }"
    check "$np ranks extremal chebfd equals 1 rank" "$py '$checker' '$work/mpie$np.h5' --same-as '$work/lowc.h5' --matrix '$work/ti.mtx'"
    timeout 120 "$mpiexec" -np $np --bind-to none "$eigs" "${ti[@]}" --window -1:0.5 --save-vectors --matrix free \
      --output "$work/mpiw$np.h5" > "$work/mpiw$np.txt" 2>&1
    check "$np ranks dense window (free): exit 0" "[ $? -eq 0 ] || { cat '$work/mpiw$np.txt'; false; }"
    check "$np ranks dense window equals 1 rank" "$py '$checker' '$work/mpiw$np.h5' --same-as '$work/win.h5' --matrix '$work/ti.mtx'"
    timeout 120 "$mpiexec" -np $np --bind-to none "$eigs" "${ti[@]}" --window -1:0.5 --method chebfd --save-vectors \
      --output "$work/mpic$np.h5" > "$work/mpic$np.txt" 2>&1
    check "$np ranks chebfd window: exit 0" "[ $? -eq 0 ] || { cat '$work/mpic$np.txt'; false; }"
    check "$np ranks chebfd window equals 1 rank" "$py '$checker' '$work/mpic$np.h5' --same-as '$work/winc.h5' --matrix '$work/ti.mtx'"
  done
else
  echo "SKIPPED: kpm-eigs under mpirun (no mpiexec given)"
fi
exit $fail
