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

enum units_system { UNITS_BINARY, UNITS_DECIMAL }; /* GiB or GB */

/* Parses "GiB" or "GB" (any case). */
int units_parse_system(const char *s, enum units_system *out, struct error *e);

/* "108.63 GiB", "1.00 MiB", "512 B": two decimals, the largest unit that keeps the number >= 1,
 * or the unit given by force_unit ("GiB", "GB", ...) when it is not NULL. */
char *units_format_bytes(char *buf, size_t n, double bytes, enum units_system sys);
char *units_format_bytes_in(char *buf, size_t n, double bytes, const char *unit);

/* The factor of a unit name ("GiB" -> 2^30), or 0 if unknown. */
double units_factor(const char *unit);

/* 7289966592 -> "7,289,966,592". */
char *units_format_grouped(char *buf, size_t n, unsigned long long v);

/* 3.2e-6 -> "3.20 us", 0.25 -> "250 ms": a time in seconds, with a unit that suits it. */
char *units_format_seconds(char *buf, size_t n, double s);

#endif
