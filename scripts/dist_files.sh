#!/bin/sh
# Whether the tarball carries every file the repository tracks: the sources, lessons, assets,
# tests and their data, the scripts. Its check (make distcheck-quick) builds and tests the
# tarball with a few tests; this finds the file a test reads that the tarball left out, which
# only the one test reading it would show. Files only a clone needs (.gitignore, the .keep of
# an empty folder) are not carried. Outside a git clone, nothing to compare: exit 0.
# Usage: scripts/dist_files.sh TARBALL (from the build folder: make distcheck-quick runs it)
tarball=$1
top=$(dirname "$0")/..
if ! git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "dist_files: not a git clone; nothing to compare"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/scalelab-dist.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
git -C "$top" ls-files | grep -v -E '(^|/)(\.gitignore|\.keep)$' | sort >"$tmp/tracked"
tar tzf "$tarball" | sed 's|^[^/]*/||' | sort >"$tmp/carried"
comm -23 "$tmp/tracked" "$tmp/carried" >"$tmp/missing"
if [ -s "$tmp/missing" ]; then
    echo "dist_files: $tarball leaves out $(wc -l <"$tmp/missing") tracked files (EXTRA_DIST or a _SOURCES in Makefile.am):"
    head -n 20 "$tmp/missing"
    exit 1
fi
echo "dist_files: $tarball carries all $(wc -l <"$tmp/tracked") tracked files"
