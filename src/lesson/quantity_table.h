/* The quantity table's lines and what the files that hold its parts share (lesson/quantity.h
 * says what a quantity is): quantity.c holds the table of the number formats, models,
 * clusters, ZeRO and pipelines, quantity_comm.c the collectives' and the ring attention's. */
#ifndef SCALELAB_LESSON_QUANTITY_TABLE_H
#define SCALELAB_LESSON_QUANTITY_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "lesson/quantity.h"

#define QN(name, unit, what, n, kind, field, f)                                                    \
    {                                                                                              \
        name, unit, what, n, kind,                                                                 \
        {                                                                                          \
            .field = f                                                                             \
        }                                                                                          \
    }
#define Q0(name, unit, what, f) QN(name, unit, what, 0, QUANTITY_PLAIN, f0, f)
#define Q1(name, unit, what, f) QN(name, unit, what, 1, QUANTITY_PLAIN, f1, f)
#define Q2(name, unit, what, f) QN(name, unit, what, 2, QUANTITY_PLAIN, f2, f)
#define Q3(name, unit, what, f) QN(name, unit, what, 3, QUANTITY_PLAIN, f3, f)
#define M0(name, unit, what, f) QN("MODEL." name, unit, what, 0, QUANTITY_MODEL, m0, f)
#define M1(name, unit, what, f) QN("MODEL." name, unit, what, 1, QUANTITY_MODEL, m1, f)
#define M2(name, unit, what, f) QN("MODEL." name, unit, what, 2, QUANTITY_MODEL, m2, f)
#define M3(name, unit, what, f) QN("MODEL." name, unit, what, 3, QUANTITY_MODEL, m3, f)
#define M4(name, unit, what, f) QN("MODEL." name, unit, what, 4, QUANTITY_MODEL, m4, f)
#define C0(name, unit, what, f) QN("CLUSTER." name, unit, what, 0, QUANTITY_CLUSTER, c0, f)

/* Whether x is a whole number in [lo, hi]: the arguments a quantity takes. */
bool quantity_whole(double x, double lo, double hi);

/* quantity_comm.c's lines, after quantity.c's. */
extern const struct quantity quantity_comm[];
extern const size_t quantity_comm_count;

#endif
