#!/bin/sh
# Presenter mode in a real terminal (tmux): the window opens on a given lesson and step,
# autoplay walks the steps by itself until a key pauses it, and G jumps to a step.
. "$srcdir/tests/lib.sh"
. "$srcdir/tests/tui/lib.sh"

start -x 120 -y 40 -- --lesson 3 --step 4
wait_for "Lesson 3 · step 4 of" "--lesson 3 --step 4 opens lesson 3 at step 4"
wait_for "No all-reduce sends less" "with that step's title"
keys G 6 Enter
wait_for "step 6 of" "G 6 Enter jumps to step 6"
wait_for "Latency or bandwidth" "and shows it"
keys G 9 9 Enter
wait_for "no step 99" "a step the lesson lacks is refused"
keys g 2 Enter
wait_for "step 2 of" "g 2 Enter too, where the panel does not use g"
quit

start -x 120 -y 40 -- --lesson 1 --step 1 --autoplay 1
wait_for "autoplay: a step every 1 s" "--autoplay 1 starts the walk"
wait_for "step 2 of" "autoplay moves on to step 2"
wait_for "step 3 of" "and on to step 3"
keys x
wait_for "autoplay paused" "a key pauses it"
step=$(printf '%s\n' "$screen" | grep -o 'step [0-9]* of' | head -n 1)
sleep 2
screen=$(capture)
check_contains "$screen" "$step" "paused, it stays at $step"
num=$(printf '%s' "$step" | tr -cd '0-9')
keys A
wait_for "step $((num + 1)) of" "A resumes it: step $((num + 1)) comes"
quit

# The keys work the same while autoplay runs: G 5 Enter pauses the walk and jumps to step 5 of
# the lesson shown (the G was taken as the pausing key, and 5 then opened lesson 5); a key that
# does nothing is named as the help names it (Enter read "key code 13").
start -x 120 -y 40 -- --lesson 1 --step 1 --autoplay 1
wait_for "step 2 of" "autoplay walks"
keys G 5 Enter
wait_for "Lesson 1 · step 5 of" "G 5 Enter during autoplay: step 5 of lesson 1"
wait_for "autoplay paused" "and the walk paused"
check_not_contains "$screen" "Lesson 5 ·" "not lesson 5"
quit
start -x 120 -y 40 -- --lesson 6 --step 1
wait_for "Lesson 6 · step 1 of" "lesson 6, whose panel takes no Enter"
keys Enter
wait_for "key Enter does nothing" "Enter, named"
quit

# --lesson without --step says which step it opens; an autoplayed demo leaves the saved place
# alone (and says so).
start -x 120 -y 40 -- --lesson 5
wait_for "lesson 5 opens at step 1 of" "--lesson 5 names the step it opens"
keys ] ]
wait_for "Lesson 5 · step 3 of" "] ] goes to step 3"
quit
start -x 120 -y 40 -- --lesson 5
wait_for "lesson 5 opens at step 3 of" "--lesson 5 again: step 3, where it was left"
wait_for "where you left it (--step 1: the first)" "and says why, and how to start at the first"
quit
start -x 120 -y 40 -- --lesson 5 --step 1 --autoplay 0.5
wait_for "this session leaves your saved progress alone" "--autoplay says it saves nothing"
wait_for "Lesson 5 · step 3 of" "autoplay walks on"
quit "the demo ends"
start -x 120 -y 40 -- --lesson 5
wait_for "lesson 5 opens at step 3 of" "the saved place is the presenter's own, not the demo's"
quit

# The hint line: the play status has its own place; a panel with nothing to play offers no
# space and no speed.
start -x 80 -y 24 -- --lesson 3 --step 2
wait_for "step 2 of" "lesson 3 at 80x24"
keys Space
wait_for "playing 1x" "space plays the ring"
hints=$(printf '%s\n' "$screen" | tail -n 1)
check_contains "$hints" "  playing 1x" "the status does not run into the hints"
check_eq "$(printf '%s\n' "$screen" | tail -n 2 | grep -cE 'spac($|[^e])|space( |$)[^p]')" 0 "no hint is cut by it"
check_contains "$(printf '%s\n' "$screen" | tail -n 2)" "space pause" "the hints that do not fit one row take a second"
check_contains "$(printf '%s\n' "$screen" | tail -n 2)" "c cluster" "every one of the panel's keys"
keys Space L
wait_for "The Lab" "the Lab"
hints=$(capture | tail -n 1)
check_not_contains "$hints" "space" "the Lab offers no space: nothing plays"
keys +
wait_for "nothing plays here, so no speed" "+ says there is nothing to speed up"
quit

# A list in a step's text keeps its items on their own lines, their next lines hanging.
start -x 100 -y 30 -- --lesson 1 --step 8
wait_for "- The forward and backward passes" "a list item starts its own line"
wait_for "   run in bf16 or fp16" "its next line hangs under its text"
wait_for "- The optimizer keeps fp32 master" "the next item starts its own line"
quit

# The last step of a lesson ends with a recap.
start -x 120 -y 40 -- --lesson 2 --step 7
wait_for "step 7 of 7" "lesson 2's last step"
keys NPage NPage NPage NPage NPage NPage
wait_for "You answered 0 of 12 questions right" "it ends with a recap of the questions"
wait_for "on this lesson in this session" "and of the time spent"
quit
done_testing
