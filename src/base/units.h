/* Numbers and sizes as people write them, and back.
 *
 * Sizes: "64MiB", "1GB", "80 GiB", "4096" (bytes); "64Mb" (bits) is refused. Decimal prefixes (kB,
 * MB, GB, TB) are powers of 1000 and binary ones (KiB, MiB, GiB, TiB) powers of 1024, as memory is
 * labelled. A size without a unit or with a bare B is a whole number of bytes: "7.5B" is
 * refused (to a person it reads as 7.5 billion, as it does for a count). Counts: "7.5B",
 * "175e9", "13M", "4k" (K, M, B or G, T: powers of 1000). Every parser takes the whole string
 * or fails: "1e", "", "12abc" and NaN are errors. */
#ifndef SCALELAB_BASE_UNITS_H
#define SCALELAB_BASE_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct error;

/* A finite or infinite decimal number ("0.1", "-1.5e-3", "inf", "-inf", "nan" when
 * allow_nonfinite). */
int units_parse_double(const char *s, bool allow_nonfinite, double *out, struct error *e);

/* A whole number in [min, max]. */
int units_parse_int(const char *s, long long min, long long max, long long *out, struct error *e);

/* A size in bytes (see above), at most max bytes; fractional results are rounded down. */
int units_parse_bytes(const char *s, double max, double *out, struct error *e);

/* A count with an optional K/M/B/T suffix, at most max. */
int units_parse_count(const char *s, double max, double *out, struct error *e);

/* How sizes are written: binary units (KiB, MiB, GiB, ...) or decimal ones (kB, MB, GB, ...).
 * Where a command prints every figure in one unit, UNITS_BINARY and UNITS_DECIMAL mean GiB and
 * GB, and UNITS_AUTO each figure in the binary unit that suits it (a tiny model's megabytes
 * are not "0.00 GiB"); elsewhere UNITS_AUTO is binary. */
enum units_system { UNITS_BINARY, UNITS_DECIMAL, UNITS_AUTO };

/* Parses "GiB", "GB" or "auto" (any case). */
int units_parse_system(const char *s, enum units_system *out, struct error *e);

/* The largest unit of the system that keeps |bytes| >= 1 of it: "B", "KiB", "MiB", "GiB" or
 * "TiB" ("kB", "MB", ... for UNITS_DECIMAL); "B" below one kilo and for NaN. */
const char *units_auto_unit(double bytes, enum units_system sys);

/* "108.63 GiB", "1.00 MiB", "512 B": two decimals in the unit units_auto_unit picks. */
char *units_format_bytes(char *buf, size_t n, double bytes, enum units_system sys);
char *units_format_bytes_in(char *buf, size_t n, double bytes, const char *unit);

/* The factor of a unit name ("GiB" -> 2^30), or 0 if unknown. */
double units_factor(const char *unit);

/* 7289966592 -> "7,289,966,592". */
char *units_format_grouped(char *buf, size_t n, unsigned long long v);

/* v written with fmt (a single double conversion: "%8.4f", "%.3g"), except that a NaN is
 * "NaN" in the field's width ("     NaN"): C's printf writes "nan" or "-nan", whose sign is an
 * artefact of the bits, not a value a learner should read. Infinities stay "inf", "-inf". */
char *units_format_num(char *buf, size_t n, const char *fmt, double v);

/* 3.2e-6 -> "3.20 us", 0.25 -> "250 ms": a time in seconds, with a unit that suits it. */
char *units_format_seconds(char *buf, size_t n, double s);

#endif
