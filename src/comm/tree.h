/* The binary trees of the tree and double-binary-tree collectives (NCCL's construction).
 *
 * Tree 0 is an in-order binary tree over positions 1..N (position = virtual rank + 1): a node
 * at position p whose lowest set bit is b has the left child p - b/2 and as right child the
 * first of p + b/2, p + b/4, ..., p + 1 that is <= N; the root is the largest power of two
 * <= N, so the depth is floor(log2 N), and the leaves are the odd positions (even ranks).
 * Tree 1 makes every inner node of tree 0 a leaf: it is tree 0 mirrored (rank r plays
 * N-1-r) for even N and shifted by one (rank r plays r+1 mod N) for odd N, where one GPU is
 * a leaf of both (Jeaugey, "Massively Scale Your Deep Learning Training with NCCL 2.4").
 * A rooted collective relabels the ranks so that its root plays tree 0's root. */
#ifndef SCALELAB_COMM_TREE_H
#define SCALELAB_COMM_TREE_H

struct tree_node {
    int parent;   /* rank, or -1 at the root */
    int child[2]; /* ranks, -1 if absent; the left one first */
    int nchild;
};

/* Node `rank` of tree `which` (0 or 1) over n GPUs, rooted at the GPU `root` (tree 0 only;
 * pass -1 for the tree's own root). */
void tree_node(int n, int which, int root, int rank, struct tree_node *out);

/* The rank at the root of tree `which` (its own root). */
int tree_root(int n, int which);

#endif
