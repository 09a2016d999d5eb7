/* ASCII stand-ins for the UTF-8 in lesson text (Greek letters, arrows, symbols), for
 * terminals that cannot show UTF-8 (lesson/ascii.h). */
#include "config.h"
#include "lesson/ascii.h"

#include <string.h>

int ascii_utf8_decode(const char *str, size_t len, unsigned *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    if (len == 0)
        return 0;
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    int n;
    unsigned c, min;
    if ((s[0] & 0xe0) == 0xc0)
        n = 2, c = s[0] & 0x1f, min = 0x80;
    else if ((s[0] & 0xf0) == 0xe0)
        n = 3, c = s[0] & 0x0f, min = 0x800;
    else if ((s[0] & 0xf8) == 0xf0)
        n = 4, c = s[0] & 0x07, min = 0x10000;
    else
        return 0;
    if ((size_t)n > len)
        return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return n;
}

static const struct {
    unsigned cp;
    const char *ascii;
} table[] = {
    {0x00a0, " "},       {0x00a9, "(c)"},    {0x00ab, "<<"},     {0x00b0, " deg"},
    {0x00b1, "+/-"},     {0x00b2, "^2"},     {0x00b3, "^3"},     {0x00b5, "u"},
    {0x00b7, "."},       {0x00b9, "^1"},     {0x00bb, ">>"},     {0x00bd, "1/2"},
    {0x00bc, "1/4"},     {0x00be, "3/4"},    {0x00d7, "x"},      {0x00f7, "/"},
    {0x0391, "Alpha"},   {0x0392, "Beta"},   {0x0393, "Gamma"},  {0x0394, "Delta"},
    {0x0398, "Theta"},   {0x039b, "Lambda"}, {0x03a0, "Pi"},     {0x03a3, "Sigma"},
    {0x03a6, "Phi"},     {0x03a8, "Psi"},    {0x03a9, "Omega"},  {0x03b1, "alpha"},
    {0x03b2, "beta"},    {0x03b3, "gamma"},  {0x03b4, "delta"},  {0x03b5, "epsilon"},
    {0x03b7, "eta"},     {0x03b8, "theta"},  {0x03bb, "lambda"}, {0x03bc, "u"},
    {0x03c0, "pi"},      {0x03c1, "rho"},    {0x03c3, "sigma"},  {0x03c4, "tau"},
    {0x03c6, "phi"},     {0x03c8, "psi"},    {0x03c9, "omega"},  {0x2009, " "},
    {0x200a, " "},       {0x202f, " "},      {0x2010, "-"},      {0x2011, "-"},
    {0x2012, "-"},       {0x2013, "-"},      {0x2014, "--"},     {0x2015, "--"},
    {0x2018, "'"},       {0x2019, "'"},      {0x201a, ","},      {0x201c, "\""},
    {0x201d, "\""},      {0x201e, "\""},     {0x2022, "*"},      {0x2026, "..."},
    {0x2032, "'"},       {0x2033, "\""},     {0x2070, "^0"},     {0x2074, "^4"},
    {0x2075, "^5"},      {0x2076, "^6"},     {0x2077, "^7"},     {0x2078, "^8"},
    {0x2079, "^9"},      {0x207a, "+"},      {0x207b, "-"},      {0x2080, "_0"},
    {0x2081, "_1"},      {0x2082, "_2"},     {0x2083, "_3"},     {0x2090, "_a"},
    {0x2190, "<-"},      {0x2191, "^"},      {0x2192, "->"},     {0x2193, "v"},
    {0x2194, "<->"},     {0x21d0, "<="},     {0x21d2, "=>"},     {0x21d4, "<=>"},
    {0x2200, "for all"}, {0x2202, "d"},      {0x2206, "Delta"},  {0x2208, " in "},
    {0x2211, "sum"},     {0x2212, "-"},      {0x2217, "*"},      {0x221a, "sqrt"},
    {0x221d, " ~ "},     {0x221e, "inf"},    {0x2223, "|"},      {0x2227, " and "},
    {0x2228, " or "},    {0x2248, "~="},     {0x2260, "!="},     {0x2261, "=="},
    {0x2264, "<="},      {0x2265, ">="},     {0x226a, "<<"},     {0x226b, ">>"},
    {0x22c5, "*"},       {0x2308, "ceil("},  {0x2309, ")"},      {0x230a, "floor("},
    {0x230b, ")"},       {0x2713, "v"},      {0x2717, "x"},      {0x25b2, "^"},
    {0x25b6, ">"},       {0x25bc, "v"},      {0x25c0, "<"},      {0x25cf, "o"},
    {0x25cb, "o"},       {0x25a0, "#"},      {0x25a1, "[]"},     {0xfeff, ""},
};

static const char *box(unsigned c)
{
    /* U+2500-257F: box drawing. Horizontal pieces are '-', double ones '=', vertical '|',
     * everything that joins lines '+'. */
    static const unsigned short horizontal[] = {0x2500, 0x2501, 0x2504, 0x2505, 0x2508,
                                                0x2509, 0x254c, 0x254d, 0x2574, 0x2576,
                                                0x2578, 0x257a, 0x257c, 0x257e};
    static const unsigned short vertical[] = {0x2502, 0x2503, 0x2506, 0x2507, 0x250a,
                                              0x250b, 0x254e, 0x254f, 0x2551, 0x2575,
                                              0x2577, 0x2579, 0x257b, 0x257d, 0x257f};
    for (size_t i = 0; i < sizeof horizontal / sizeof horizontal[0]; i++)
        if (c == horizontal[i])
            return "-";
    if (c == 0x2550)
        return "=";
    for (size_t i = 0; i < sizeof vertical / sizeof vertical[0]; i++)
        if (c == vertical[i])
            return "|";
    if (c == 0x2571)
        return "/";
    if (c == 0x2572)
        return "\\";
    if (c == 0x2573)
        return "X";
    return "+";
}

static const char *lookup(unsigned c)
{
    if (c >= 0x2500 && c <= 0x257f)
        return box(c);
    if (c >= 0x2580 && c <= 0x259f) /* block elements: full and shaded blocks are ink */
        return c == 0x2591 ? "." : c == 0x2592 ? ":" : "#";
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].cp == c)
            return table[i].ascii;
    return "?";
}

char *ascii_line(char *dst, size_t n, const char *src)
{
    if (n == 0)
        return dst;
    size_t o = 0, len = strlen(src);
    for (size_t i = 0; i < len;) {
        unsigned c;
        int k = ascii_utf8_decode(src + i, len - i, &c);
        const char *out;
        char one[2] = {0, 0};
        if (k == 0)
            out = "?", k = 1;
        else if (c < 0x80)
            one[0] = (char)c, out = one;
        else
            out = lookup(c);
        size_t m = strlen(out);
        if (o + m >= n)
            break;
        memcpy(dst + o, out, m);
        o += m;
        i += (size_t)k;
    }
    dst[o] = '\0';
    return dst;
}
