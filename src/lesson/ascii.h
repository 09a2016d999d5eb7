/* ASCII renderings of UTF-8 text, for terminals that cannot show UTF-8.
 *
 * Typographic characters become their usual ASCII spelling (– -> "-", — -> "--", “ ” -> '"',
 * × -> "x", ≈ -> "~=", ≤ -> "<=", → -> "->", α -> "alpha", Ψ -> "Psi", µ -> "u"), box drawing
 * becomes - | +, block elements # and spaces; any other non-ASCII character becomes '?'. */
#ifndef SCALELAB_LESSON_ASCII_H
#define SCALELAB_LESSON_ASCII_H

#include <stddef.h>

/* Writes the ASCII rendering of src into dst (n bytes, always terminated, cut if it does not
 * fit) and returns dst. Invalid UTF-8 bytes become '?'. */
char *ascii_line(char *dst, size_t n, const char *src);

/* Decodes one UTF-8 character at s: returns its length (1-4) and sets *cp, or returns 0 for an
 * invalid sequence (overlong, surrogate, beyond U+10FFFF, cut short). s must be NUL-terminated
 * or hold a complete character. */
int ascii_utf8_decode(const char *s, size_t len, unsigned *cp);

#endif
