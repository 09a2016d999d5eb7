/* A GPU's two buffers for exchanging the model's values with other GPUs point to point, in the
 * training format: context parallelism's ring (par/cp.h) and expert parallelism's all-to-alls
 * (par/ep.h) share them. The values go into a send buffer, which a rendezvous send is read out
 * of while the receive buffer takes what the peers send (a GPU's two p2p buffers:
 * communication memory), and come back out of the receive buffer; they are in the format
 * already, so packing them is exact. It keeps the bytes the device sent in the step's
 * exchanges and the step's first failure, which its strategy reports (par/strategy.h): a
 * failed exchange leaves the step's later ones undone. */
#ifndef SCALELAB_PAR_XBUF_H
#define SCALELAB_PAR_XBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "num/fp.h"
#include "par/dp.h"

struct device;

struct xbuf {
    struct device *d;
    struct dp_mem mem;
    enum fp_format fmt;
    enum gpt_mem kind; /* communication, or reserved: one block (xbuf_reserve) */
    void *send, *recv;
    size_t bytes;  /* each buffer's; reserved, the block's */
    uint64_t sent; /* by the exchanges since the step began */
    struct error err;
};

/* Room for elems values of fmt in each buffer, through mem (names: the two buffers', for the
 * allocator). 0 or ERR_NOMEM, what naming the strategy. */
int xbuf_init(struct xbuf *x, struct device *d, const struct dp_mem *mem, enum fp_format fmt,
              size_t elems, const char *send_name, const char *recv_name, const char *what,
              struct error *e);
/* For exchanges of variable sizes (dropless expert parallelism): one block of elems values as
 * reserved memory (GPT_MEM_ARENA), as ZeRO-3's gathered weights are, holding each exchange's
 * send buffer then its receive buffer, back to back (xbuf_pack_v places them); their bytes are
 * charged to communication for the exchange and released after it, so the ledger's
 * communication is what the exchanges hold and its peak the largest, within elems. */
int xbuf_reserve(struct xbuf *x, struct device *d, const struct dp_mem *mem, enum fp_format fmt,
                 size_t elems, const char *send_name, const char *recv_name, const char *what,
                 struct error *e);
void xbuf_fini(struct xbuf *x);
/* Bytes of n values in the format. */
size_t xbuf_size(const struct xbuf *x, size_t n);
/* n values of src into the send buffer, before an exchange: true; false when a failure came
 * before in the step, or (kept as the step's failure, what naming the strategy) when they do
 * not fit. */
bool xbuf_pack(struct xbuf *x, const float *src, size_t n, const char *what);
/* After an exchange that returned rc, begun when the device had sent `before` bytes: its bytes
 * counted, and when it succeeded the n values received unpacked into dst. */
void xbuf_unpack(struct xbuf *x, int rc, uint64_t before, float *dst, size_t n);
/* The same for an exchange of n values out and m in, in a reserved block: the send buffer its
 * first n values, the receive buffer the m after them, their bytes charged to communication
 * until xbuf_unpack_v. */
bool xbuf_pack_v(struct xbuf *x, const float *src, size_t n, size_t m, const char *what);
void xbuf_unpack_v(struct xbuf *x, int rc, uint64_t before, float *dst, size_t n, size_t m);
/* Bytes the device has sent so far (an exchange's `before`). */
uint64_t xbuf_device_sent(const struct xbuf *x);

/* For the strategy's face: a step begins; the step's first failure (0, or its code with e set). */
void xbuf_step_begin(struct xbuf *x);
int xbuf_failed(const struct xbuf *x, struct error *e);

#endif
