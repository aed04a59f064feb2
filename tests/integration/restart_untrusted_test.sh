#!/usr/bin/env bash
# --restart with a file that is not what it claims (issue 11, untrusted files): a real
# checkpoint is edited with h5py into small files whose headers claim huge arrays, wrong
# types, negative or out-of-range values, text where numbers belong, links out of the
# file, terminal escapes; and paths that are no regular file. Each must be refused quickly
# with exit 2 and the one-line "not a usable topokpm checkpoint" message: no bad_alloc, no
# crash, no hang, nothing of the file's text echoed.
set -u
exe="$1"
source "$(dirname "$0")/../support/script_lib.sh"
if ! $py -c 'import h5py' 2>/dev/null; then echo "FAIL: /usr/bin/python3 has no h5py (scripts/setup_debian.sh installs python3-h5py, python3-numpy, python3-matplotlib)"; exit 1; fi
args=(--model ti --lattice 24x24x12 --disorder 0.5 --moments 4000 --vectors 8 --energy-range -6:6 --threads 2)

# A genuine checkpoint: SIGTERM once the first periodic one exists (exit 75).
"$exe" "${args[@]}" --output "$work/part.h5" --checkpoint "$work/ck.h5" --checkpoint-every 0.2 > "$work/part.txt" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -e "$work/ck.h5" ] && break; sleep 0.05; done
sleep 0.3
kill -TERM "$pid"; wait "$pid"; rc=$?
check "base checkpoint written (exit 75)" "[ $rc -eq 75 ] && [ -s '$work/ck.h5' ]"
check "base checkpoint has a block under way" "$py -c 'import h5py,sys; sys.exit(0 if \"/checkpoint/block/current\" in h5py.File(sys.argv[1], \"r\") else 1)' '$work/ck.h5'"

# craft NAME PYTHON: copies the checkpoint to NAME.h5 and runs PYTHON with f = the open copy.
craft() {
  cp "$work/ck.h5" "$work/$1.h5"
  $py - "$work/$1.h5" <<PY
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r+")
c = f["/checkpoint"]
def replace(name, **kw):
    del f[name]
    f.create_dataset(name, **kw)
$2
f.close()
PY
}

# refused NAME WHY [PATH]: --restart PATH (default NAME.h5) exits 2 within 20 s with the
# message (and WHY in it), no bad_alloc, no control characters, one line.
refused() {
  local name="$1" why="$2" path="${3:-$work/$1.h5}"
  local start=$SECONDS
  rm -f "$work/never.h5"
  timeout 20 "$exe" "${args[@]}" --output "$work/never.h5" --restart "$path" > "$work/$name.txt" 2>&1
  local rc=$? took=$((SECONDS - start))
  check "$name: refused with exit 2 (got $rc, ${took}s)" "[ $rc -eq 2 ]"
  check "$name: says why" "grep -q 'not a usable topokpm checkpoint' '$work/$name.txt' && grep -q -- \"$why\" '$work/$name.txt'"
  check "$name: no bad_alloc, no control characters, one line" \
    "! grep -q 'bad_alloc' '$work/$name.txt' && ! grep -q \$'\\x1b' '$work/$name.txt' && [ \$(wc -l < '$work/$name.txt') -eq 1 ]"
  check "$name: no output file" "[ ! -e '$work/never.h5' ]"
}

# Huge claims in a small file: chunked datasets with a fill value store nothing.
craft huge_block 'replace("/checkpoint/block/current", shape=(10**9, 8, 2), dtype="f8", chunks=(1024, 8, 2), fillvalue=1.0)'
check "huge_block: the crafted file (< 16 MB) claims 128 GB" "[ \$(stat -c %s '$work/huge_block.h5') -lt 16000000 ]"
refused huge_block "block/current has shape \[1000000000, 8, 2\]"
craft huge_sums 'replace("/checkpoint/sums", shape=(10**8, 4000), dtype="f8", chunks=(16, 4000), fillvalue=0.0)'
refused huge_sums "sums has shape \[100000000, 4000\]"
craft huge_raw 'replace("/checkpoint/block/raw", shape=(8, 2**40), dtype="f8", chunks=(8, 1024))'
refused huge_raw "raw has shape"
# The right shape but nothing stored: not read either.
craft unstored_sums 'shape = f["/checkpoint/sums"].shape; replace("/checkpoint/sums", shape=shape, dtype="f8", chunks=shape, fillvalue=0.0)'
refused unstored_sums "does not store its values"
craft other_rows 'replace("/checkpoint/block/previous", data=np.zeros((100, 8, 2)))'
refused other_rows "this run needs \[N, W, 2\] with N = 27648 rows"
craft other_width 'replace("/checkpoint/block/current", data=np.zeros((27648, 4, 2))); replace("/checkpoint/block/previous", data=np.zeros((27648, 4, 2)))'
refused other_width "block/current has shape \[27648, 4, 2\]"
craft int_block 'replace("/checkpoint/block/current", data=np.zeros((27648, 8, 2), dtype="i8"))'
refused int_block "is not floating point"
craft nan_sums 'd = f["/checkpoint/sums"]; a = d[...]; a[0, 0] = np.nan; d[...] = a'
refused nan_sums "sums holds non-finite values"

# Header values: negative, beyond the int range (would wrap), text instead of numbers.
craft negative_slots 'c.attrs["num_slots"] = np.int64(-8)'
refused negative_slots "num_slots = -8 is outside 1"
craft wrapping_realizations 'c.attrs["num_realizations"] = np.int64(2**32 + 1)'
refused wrapping_realizations "num_realizations = 4294967297 is outside 1 .. 2147483647"
craft huge_moments 'c.attrs["num_moments"] = np.int64(2**31 - 1)'
refused huge_moments "M = 2147483647"
craft huge_blocks_done 'c.attrs["blocks_done"] = np.int64(2**62)'
refused huge_blocks_done "blocks_done = 4611686018427387904 is outside 0 .. 1"
craft huge_sweeps 'f["/checkpoint/block"].attrs["sweeps_done"] = np.int64(2**40)'
refused huge_sweeps "sweeps_done = 1099511627776 is outside"
craft text_moments 'c.attrs["num_moments"] = "4000"'
refused text_moments "num_moments.*is not a scalar signed integer"
craft unsigned_moments 'c.attrs["num_moments"] = np.uint64(4000)'
refused unsigned_moments "is not a scalar signed integer"
craft nan_scale 'c.attrs["scale_a"] = np.nan'
refused nan_scale "scaling or spectral bounds"
craft float_realization 'c.attrs["realization"] = 0.0'
refused float_realization "realization.*is not a scalar signed integer"
# Attributes that are arrays: reading one into a scalar would overrun it.
craft array_format 'c.attrs.create("format", data=np.array([b"topokpm-checkpoint"] * 500), dtype=h5py.string_dtype("ascii", 64))'
refused array_format "format.*is not a scalar string"
craft array_vlen_format 'c.attrs.create("format", data=["topokpm-checkpoint"] * 1000, dtype=h5py.string_dtype())'
refused array_vlen_format "format.*is not a scalar string"
craft array_sweeps 'f["/checkpoint/block"].attrs["sweeps_done"] = np.arange(4000, dtype=np.int64)'
refused array_sweeps "sweeps_done.*is not a scalar signed integer"

# Text that would be printed: terminal escapes and megabytes are refused, not echoed.
craft escape_command 'c.attrs["command_line"] = "kpm-dos \x1b]0;owned\x07\x1b[2J"; f["/checkpoint/parameters"].attrs["moments"] = "5"'
refused escape_command "command_line is not printable text"
craft long_parameter 'f["/checkpoint/parameters"].attrs["model"] = "ti" + " " * 100000'
refused long_parameter "parameter 'model' is not printable text of at most 256 bytes"

# Links out of the file: an external link to a FIFO would block, one to a device would read it.
mkfifo "$work/fifo"
craft external_sums 'del f["/checkpoint/sums"]; f["/checkpoint/sums"] = h5py.ExternalLink(sys.argv[1].rsplit("/", 1)[0] + "/fifo", "/x")'
refused external_sums "'/checkpoint/sums' is a soft or external link"
craft soft_block 'del f["/checkpoint/block/current"]; f["/checkpoint/block/current"] = h5py.SoftLink("/checkpoint/block/previous")'
refused soft_block "is a soft or external link"

# Paths that are no regular file.
mkdir "$work/dir.h5"
refused directory "Is a directory" "$work/dir.h5"
refused fifo "not a regular file" "$work/fifo"
refused dev_zero "not a regular file" /dev/zero
refused missing "No such file or directory" "$work/missing.h5"
printf '\x1b[2Jgarbage' > "$work/garbage.h5"
refused garbage "garbage.h5" "$work/garbage.h5"

# The genuine checkpoint still resumes.
"$exe" "${args[@]}" --output "$work/done.h5" --restart "$work/ck.h5" --quiet > "$work/resume.txt" 2>&1
check "the genuine checkpoint resumes (exit 0)" "[ $? -eq 0 ] && [ -s '$work/done.h5' ]"
exit $fail
