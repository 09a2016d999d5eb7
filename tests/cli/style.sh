#!/bin/sh
# Every C file opens with a comment saying what it is for, and follows the committed
# .clang-format (that part skipped where clang-format is missing). The source is the same in
# every build: the sanitizer builds skip it (scripts/test checks it in the normal build).
. "$srcdir/tests/lib.sh"

if [ -n "${SCALELAB_SANITIZERS:-}" ]; then
    echo "1..0 # SKIP the style of the source is checked in the normal build"
    exit 0
fi

# Every C file opens with a comment saying what it is for.
files=$(cd "$srcdir" && find src tests -name '*.[ch]' | sort)
open=$(cd "$srcdir" && awk 'FNR == 1 && substr($0, 1, 2) != "/*" { print FILENAME }' $files)
for f in $files; do
    if printf '%s\n' "$open" | grep -qxF "$f"; then
        not_ok "opening comment: $f" "say what the file is for in a comment on its first line"
    else
        ok "opening comment: $f"
    fi
done
# No source file over 1,200 lines and no function over 100 (DESIGN.md, "Layers"): past them a
# file or a function is split by what it does. The source is clang-formatted, so a function's
# body opens with '{' in the first column and closes with '}' there.
big=$(cd "$srcdir" && find src -name '*.[ch]' -exec wc -l {} + | awk '$2 != "total" && $1 > 1200 { print $2 " (" $1 " lines)" }')
check_eq "$big" "" "no source file over 1,200 lines"
long=$(cd "$srcdir" && find src -name '*.c' | sort | xargs awk '
    FNR == 1 { start = 0 }
    /^[A-Za-z]/ { name = $0 }
    /^\{/ { start = FNR; fn = name }
    /^\}/ && start { if (FNR - start + 1 > 100) print FILENAME ":" start ": " FNR - start + 1 " lines: " fn; start = 0 }')
check_eq "$long" "" "no function over 100 lines"
command -v clang-format >/dev/null 2>&1 || { done_testing; exit 0; }
# one clang-format for every file (it names each file that is not formatted)
unformatted=$(cd "$srcdir" && clang-format --style=file --dry-run --Werror $files 2>&1 |
    sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
for f in $files; do
    if printf '%s\n' "$unformatted" | grep -qxF "$f"; then
        not_ok "clang-format: $f" "run: clang-format -i $f"
    else
        ok "clang-format: $f"
    fi
done
done_testing
