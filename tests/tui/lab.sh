#!/bin/sh
# The Lab in a real terminal (tmux): the bars for DDP and ZeRO 1-3 of synthetic-7b, and how they
# change when the GPUs and the ZeRO stage change.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

start -x 120 -y 40 --
wait_for "q quit" "the window opened"
keys L
wait_for "Data parallelism and ZeRO memory" "L opens the Lab"
wait_for "DDP      109.55 GiB over by 29.55 GiB" "7B with DDP on 8 GPUs: 108.63 GiB of states + 0.92 GiB of activations (flash attention), over 80 GiB"
wait_for "ZeRO-3    16.15 GiB fits" "ZeRO-3 over 8 GPUs fits (with its 1.65 GiB of gathered layers and gradient pieces)"
wait_for "Ψ = 7,289,966,592, N_d = 8" "the count and the data-parallel degree"

# GPUs: select the knob and double them; ZeRO-3 halves its sharded states.
keys j l
wait_screen "N_d = 16"
wait_for "Ψ = 7,289,966,592, N_d = 16" "Right doubles the GPUs"
wait_for "ZeRO-3     9.36 GiB fits" "ZeRO-3 on 16 GPUs: 108.63/16 + 0.92 GiB of activations + 1.65 GiB of buffers"
wait_for "DDP      109.55 GiB over by 29.55 GiB" "DDP does not shrink with more GPUs"

# The stage: z moves the highlight and the detail line.
keys z z
wait_screen "ZeRO-2: W"
wait_for "ZeRO-2: W 13.58  G 0.85  M 1.70  O 3.39  A 0.92  C 0.05 GiB" "z selects ZeRO-2: its parts (C: its two 25 MiB buckets)"

# The memory: down to 16 GiB, ZeRO-3 still fits, ZeRO-1 overflows by its amount.
keys j j j j j j h h h h h h
wait_for "GPU mem    16 GiB" "the memory knob goes down to 16 GiB"
wait_for "ZeRO-1    33.17 GiB over by 17.17 GiB" "ZeRO-1 overflows 16 GiB, by how much"
wait_for "ZeRO-3     9.36 GiB fits" "ZeRO-3 still fits"

quit

# 80x24, lesson 5: every stage's traffic stays on its row (lesson 5's question needs it).
start -x 80 -y 24 -- --lesson 5 --step 2
wait_for "DDP     109.55 over 29.55  comm 23.76 GiB" "DDP: total, overflow and traffic"
wait_for "ZeRO-3   16.15 fits  comm 35.64 GiB" "ZeRO-3 sends more"
wait_for "AdamW, in GiB" "the rows' unit, said once"
# the tiny model: its figures in MiB (not 0.00 GiB), at its own sequence length
keys m
wait_for "model tiny" "m: the next model, tiny"
wait_for "AdamW, in MiB" "tiny's figures in MiB"
wait_for "DDP       3.24 fits  comm 691.47 KiB" "DDP: 3.24 MiB, its traffic in KiB"
check_contains "$screen" "seq   64" "tiny's own sequence length"
check_eq "$(printf '%s\n' "$screen" | grep -c ' 0\.00 ')" 0 "no figure reads 0.00"
# the sequence knob (the last; k from the first goes round to it), twice
keys k l
wait_for "seq   128" "the sequence length doubles"
wait_for "lab: seq = 128" "and the status line says so"
quit
done_testing
