# The preamble of the test scripts (tests/integration, tests/mpi): each sources it with
#     source "$(dirname "$0")/../support/script_lib.sh"
# and gets
#   work   a scratch directory, removed when the script exits;
#   py     the first python3 that has h5py and numpy: Debian's /usr/bin/python3 here
#          (scripts/setup_debian.sh installs them), the image's python3 on the GPU machine;
#          /usr/bin/python3 when none has them, and the script's own check says so;
#   fail   0 until a check fails; the script ends with `exit $fail`;
#   check LABEL EXPR   evaluates EXPR and prints "ok: LABEL" or "FAIL: LABEL" (setting fail=1);
# and OpenMP threads that sleep at a barrier instead of spinning: ctest -j N runs N tests on N
# cores (cmake/TopokpmHelpers.cmake says what spinning cost).
export OMP_WAIT_POLICY=passive
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail=0
py=/usr/bin/python3
for c in /usr/bin/python3 python3; do
  "$c" -c 'import importlib.util as u, sys; sys.exit(not (u.find_spec("h5py") and u.find_spec("numpy")))' 2>/dev/null &&
    { py=$c; break; }
done
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
