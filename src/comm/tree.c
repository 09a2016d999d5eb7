/* The binary trees of the tree and double-binary-tree collectives, built as NCCL builds
 * them (comm/tree.h). */
#include "config.h"
#include "comm/tree.h"

static int pow2_floor(int n)
{
    int p = 1;
    while (p * 2 <= n)
        p *= 2;
    return p;
}

/* The parent position of position p in the in-order tree over 1..n, or 0 at the root. */
static int pos_parent(int n, int p)
{
    int b = p & -p;
    for (int l = 2 * b; l <= pow2_floor(n); l *= 2) {
        int a = (p & ~(2 * l - 1)) | l;
        if (a <= n)
            return a;
    }
    return 0;
}

static void pos_children(int n, int p, int child[2])
{
    int b = p & -p;
    child[0] = child[1] = 0;
    if (b == 1)
        return;
    child[0] = p - b / 2;
    for (int d = b / 2; d >= 1; d /= 2)
        if (p + d <= n) {
            child[1] = p + d;
            break;
        }
}

/* The virtual rank rank plays in tree which, and back. */
static int to_virtual(int n, int which, int shift, int rank)
{
    if (which == 1)
        rank = n % 2 == 0 ? n - 1 - rank : (rank + 1) % n;
    return ((rank + shift) % n + n) % n;
}

static int from_virtual(int n, int which, int shift, int v)
{
    v = ((v - shift) % n + n) % n;
    if (which == 1)
        v = n % 2 == 0 ? n - 1 - v : (v - 1 + n) % n;
    return v;
}

void tree_node(int n, int which, int root, int rank, struct tree_node *out)
{
    int shift = root < 0 ? 0 : pow2_floor(n) - 1 - root;
    int p = to_virtual(n, which, shift, rank) + 1;
    int par = pos_parent(n, p), ch[2];
    pos_children(n, p, ch);
    out->parent = par ? from_virtual(n, which, shift, par - 1) : -1;
    out->nchild = 0;
    for (int i = 0; i < 2; i++) {
        out->child[i] = ch[i] ? from_virtual(n, which, shift, ch[i] - 1) : -1;
        out->nchild += ch[i] != 0;
    }
}

int tree_root(int n, int which)
{
    return from_virtual(n, which, 0, pow2_floor(n) - 1);
}
