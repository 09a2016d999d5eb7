/* The one way scalelab writes JSON, over jansson: one policy for the numbers JSON cannot
 * hold and one for precision, so a figure reads the same in every command's --json.
 *
 * Non-finite numbers: JSON has no inf or NaN (jansson refuses them, and a json_pack given
 * one fails, dropping the whole entry), so they are written as the strings "inf", "-inf" and
 * "nan"; text output writes the same words without quotes.
 *
 * Precision: JSON_EXACT (17 significant digits) reads back as the same double, for values
 * whose bits matter (formats' roundings, a lesson's answers, ratios a lesson compares);
 * JSON_FIGURES (10 significant digits) for measured and predicted figures (times, bandwidths,
 * memory in GiB), where the last digits of a double are noise a reader should not see. */
#ifndef SCALELAB_BASE_JSON_H
#define SCALELAB_BASE_JSON_H

#include <jansson.h>
#include <stdio.h>

enum { JSON_EXACT = 17, JSON_FIGURES = 10 };

/* "nan", "inf" or "-inf" for a non-finite v, else NULL. */
const char *json_nonfinite(double v);

/* v as a JSON value: a number, or the string json_nonfinite gives. */
json_t *json_num(double v);

/* A whole quantity (bytes, elements) as a JSON integer while it is exact (below 2^53), else
 * as a number. */
json_t *json_whole(double v);

/* Writes doc to f, indented by two spaces, reals with digits significant digits, and a
 * newline; takes the reference to doc. The return of json_dumpf: 0, or -1. */
int json_write(FILE *f, json_t *doc, int digits);

/* Writes doc to f on one line, without spaces, and a newline, reals with digits significant
 * digits, the line in one piece and flushed (what f held before first), so a reader or a
 * process killed by a signal never sees half of it; takes the reference to doc. For streams of
 * JSON lines (train --json: one object per step, then the summary). 0, or -1. */
int json_write_line(FILE *f, json_t *doc, int digits);

/* For JSON written by hand, a stream that holds no tree: v with digits significant digits,
 * or its quoted string. */
void json_put_num(FILE *f, double v, int digits);

/* ... and s as a JSON string, quoted and escaped by jansson ("" for NULL; bytes that are not
 * UTF-8 are left out). */
void json_put_str(FILE *f, const char *s);

/* v as text: "nan", "inf", "-inf", or the number with digits significant digits. */
char *json_num_text(char *buf, size_t n, double v, int digits);

#endif
