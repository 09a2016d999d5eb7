/* Figures in a lesson's text: computed when the lesson is read, or cited.
 *
 * A figure that depends on a model, a preset, a layout or a formula is written as a
 * placeholder that names what computes it (lesson/quantity.h's expressions), and the text
 * holds its value, with its unit, from the engine of the day:
 *
 *     {synthetic_7b.states GiB}           108.63 GiB
 *     {synthetic_7b.params}               7,289,966,592
 *     {pipeline.bubble(4, 8) %}           37.5%
 *     {ring.allreduce_time(8, 268435456) ms .3}   1.071 ms
 *     {synthetic_7b.flops(524288) e}      2.46 × 10^16
 *
 * Inside the braces: the expression, then optionally a unit (any lesson_unit_factor knows,
 * "bytes", "%" or "×"; a value in bytes, seconds or B/s is converted to it, a plain number is
 * taken in the unit's base: {1e9 GB} is "1 GB") and a format: ".N" for N decimals, "," for a
 * whole number grouped by thousands, "e" for 3 significant digits times a power of ten
 * (".N" takes N from 0 to 17), and ">N" right-aligns the figure in N columns (for tables).
 * Without a format a whole number is written as is (grouped from 10,000), anything else with
 * at most 2 decimals (trailing zeros dropped), or 3 significant digits below 0.01.
 *
 * A constant quoted from a source (a datasheet, a paper's table, PyTorch's default) stays as
 * written, marked so: {cited 312 TFLOP/s | NVIDIA A100 datasheet} shows "312 TFLOP/s". The
 * source after " | " is required. "{{" and "}}" give a brace. */
#ifndef SCALELAB_LESSON_FIGURE_H
#define SCALELAB_LESSON_FIGURE_H

#include <stddef.h>

struct error;

/* The text with its figures rendered, in out (n bytes). 0, or ERR_INVAL with e saying what is
 * wrong ("column 12: unknown quantity 'x'"), or ERR_NOMEM when out is too small. */
int figure_render(const char *text, char *out, size_t n, struct error *e);

/* The first figure written by hand in text: a number with a unit (GiB, GB, MiB, KiB, B,
 * bytes, %, µs, us, ms, s, GB/s, TFLOP/s, ... or × written against it: "1.5×") outside any
 * placeholder or citation. Returns where it starts and its length in *len, or NULL. */
const char *figure_literal(const char *text, size_t *len);

#endif
