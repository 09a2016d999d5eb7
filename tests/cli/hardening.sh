#!/bin/sh
# Issue 11, "Hardening": options that were accepted and ignored, exit statuses and messages
# that were wrong, sizes that were ambiguous, files read without a size limit. Each check
# failed before its fix.
. "$srcdir/tests/lib.sh"

D=$T_TMP

# ---------------------------------------------------------------- collective --root
run collective --gpus 8 --root 8
check_status 2 "collective --root 8 on 8 GPUs (an all-reduce)"
check_contains "$err" "--root 8: only broadcast and reduce have a root, not allreduce" "--root with an all-reduce is refused"
run collective --gpus 4 --size 64 --op allgather --root 1
check_status 2 "--root with an all-gather"
check_contains "$err" "only broadcast and reduce have a root" "and says which operations take one"
run collective --gpus 4 --size 64 --op reduce --root 4
check_status 2 "--root 4 of 4 GPUs for a reduce"
check_contains "$err" "--root 4: there are GPUs 0 to 3" "an out-of-range root"
run collective --gpus 4 --size 64 --op reduce --root 3 --json
check_status 0 "--root 3 of 4 GPUs for a reduce"
check_json 'd["verified"]' "the reduce to GPU 3 is verified"

# ---------------------------------------------------------------- output paths, before the run
run collective --gpus 2 --size 64 --trace /proc/t.json
check_status 2 "collective --trace /proc/t.json"
check_contains "$err" "--trace: /proc/t.json: cannot write: No such file or directory" "the trace path is checked before the run"
check_eq "$out" "" "nothing was run"
run train --steps 2 --batch 1 --trace /proc/t.json
check_status 2 "train --trace /proc/t.json"
if [ -w /dev/full ]; then
    run collective --gpus 8 --size 1MiB --trace /dev/full
    check_status 1 "collective --trace /dev/full"
    check_contains "$err" "/dev/full: cannot write: No space left on device" "the real errno, not 'Input/output error'"
fi

# ---------------------------------------------------------------- sizes: 7.5B is not 7.5 bytes
run memory --gpu-mem 7.5B
check_status 2 "memory --gpu-mem 7.5B"
check_contains "$err" "--gpu-mem: '7.5B': a size in bytes is a whole number; B here means bytes, not billions: for 7.5 billion bytes write 7.5GB" "7.5B as a size is refused with a hint"
run collective --size 100.5
check_status 2 "collective --size 100.5"
check_contains "$err" "a size in bytes is a whole number (or give a unit" "a fraction of a byte is refused"
run memory --params 7.5B --gpu-mem 80GiB --json
check_status 0 "--params 7.5B is still 7.5 billion"
check_json 'd["params"] == 7500000000' "7.5B parameters"

# ---------------------------------------------------------------- the data folder
SCALELAB_DATA=/nonexistent run run 1
check_status 2 "SCALELAB_DATA=/nonexistent scalelab run 1"
check_contains "$err" "/nonexistent/lessons: cannot open the lessons folder" "the folder is named"
SCALELAB_DATA=/nonexistent run memory
check_status 2 "SCALELAB_DATA=/nonexistent scalelab memory"
check_contains "$err" "no presets found in /nonexistent/assets/models: check SCALELAB_DATA" "the presets folder is named"

# ---------------------------------------------------------------- size limits, before reading
# sparse files: huge to stat, nothing on disk
truncate -s 20G "$D/big.ini" "$D/99-big.lesson"
run memory --model "$D/big.ini"
check_status 2 "a 20 GB model file"
check_contains "$err" "is not a preset file (larger than 1 MiB)" "refused by its size"
run run "$D/99-big.lesson"
check_status 2 "a 20 GB lesson file"
check_contains "$err" "larger than 1048576 bytes: not a lesson" "refused by its size"

done_testing
