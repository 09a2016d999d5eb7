#!/bin/sh
# Every C file opens with a comment saying what it is for, and follows the committed
# .clang-format (that part skipped where clang-format is missing).
. "$srcdir/tests/lib.sh"

# Every C file opens with a comment saying what it is for.
for f in $(cd "$srcdir" && find src tests -name '*.[ch]' | sort); do
    if head -c 2 "$srcdir/$f" | grep -q '^/\*'; then
        ok "opening comment: $f"
    else
        not_ok "opening comment: $f" "say what the file is for in a comment on its first line"
    fi
done
command -v clang-format >/dev/null 2>&1 || { done_testing; exit 0; }
for f in $(cd "$srcdir" && find src tests -name '*.[ch]' | sort); do
    if clang-format --style=file --dry-run --Werror "$srcdir/$f" >/dev/null 2>&1; then
        ok "clang-format: $f"
    else
        not_ok "clang-format: $f" "run: clang-format -i $f"
    fi
done
done_testing
