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
