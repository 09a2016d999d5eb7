#!/bin/sh
# Every C file follows the committed .clang-format (skipped where clang-format is missing).
. "$srcdir/tests/lib.sh"

if ! command -v clang-format >/dev/null 2>&1; then
    echo "1..0 # SKIP clang-format is not installed"
    exit 0
fi
for f in $(cd "$srcdir" && find src tests -name '*.[ch]' | sort); do
    if clang-format --style=file --dry-run --Werror "$srcdir/$f" >/dev/null 2>&1; then
        ok "clang-format: $f"
    else
        not_ok "clang-format: $f" "run: clang-format -i $f"
    fi
done
done_testing
