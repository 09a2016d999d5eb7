/* The simulated cluster: one thread per GPU, point-to-point sends, simulated time, abort.
 *
 * cluster_run(c, fn, arg) runs fn on every device at once, one pthread each (1 to
 * CLUSTER_MAX_GPUS of them, whatever the host's core count: every wait blocks on a condition
 * variable, none spins), joins them all and returns the first failure.
 *
 * Sends (dev_isend, dev_recv, dev_wait) are rendezvous DMAs: the sender posts its buffer, the
 * receiver copies the bytes out of it straight into its own buffer (or, for a reduction,
 * combines them into it with a function it supplies), and the sender's dev_wait returns once
 * they have been taken: until then the sender must not write that buffer. Messages between
 * two devices are matched in the order they were sent.
 *
 * Simulated time (Hockney's model, as comm/cost.h): each device has one outgoing port, one
 * incoming link and a clock per stream (like CUDA streams or NCCL channels: the two trees of a
 * double binary tree run on two streams and do not wait for each other). A send of m bytes on
 * a stream becomes ready at that stream's clock, occupies the port for α + m/β from the
 * earliest moment the port is free that long, and arrives when it ends; α and β are the
 * spec's intra-node or inter-node ones (GPU g is on node g / gpus_per_node). β is per GPU and
 * direction, so the receiver's incoming link carries one message's m bytes (m/β, the end of
 * the message's α + m/β) at a time: a message whose bytes would overlap those of one the
 * receiver took before arrives after them (the receiver books its link in the order it takes
 * its messages, so this too depends only on the program). A receive sets its stream's clock
 * to the later of its own and the arrival; dev_wait does the same for the sender (the buffer
 * is free again). A send's EV_SEND spans its time on the sender's port (its t_end is the
 * arrival a free incoming link would give); its EV_RECV's t_end is the arrival it got
 * (event_send_arrivals pairs them). Compute joins the streams (dev_join) and advances them by FLOPs
 * / peak. A run timed as another model (sim/spec.h's struct time_scale) keeps every rule: its
 * compute runs at peak x efficiency, and a message's α and bytes are those it stands for
 * (dev_time_msgs), which its receiver's link books too. With one stream this is: each send starts
 * when the device is ready and its previous send has left. Simulated times depend only on the
 * program, never on the host.
 *
 * Stopping: every wait has a deadline (host seconds) and watches the cluster-wide abort flag.
 * A device that fails (an error returned by fn, out of memory, a deadline, an injected
 * failure) aborts the cluster: every other device's wait returns ERR_RUN, every thread is
 * joined, and cluster_run reports the first failure, naming the GPU.
 *
 * A wire (struct dev_wire): the devices live in separate processes, one GPU per MPI rank
 * (comm/mpiwire.h), and each process runs only its own device. Its sends keep every rule
 * above: the sender books its port and stamps the message with its start and arrival, the
 * receiver books its incoming link and answers the sender with the arrival it gave, the
 * counters and events are the same; only the bytes cross the wire instead of a copy between
 * threads. So the simulated times, the ledger and the bytes sent are those of the same run
 * on threads, whatever the real network takes. A device's failure (dev_fail) stops every
 * process through the wire, with its message. */
#ifndef SCALELAB_SIM_CLUSTER_H
#define SCALELAB_SIM_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/event.h"
#include "sim/ledger.h"
#include "sim/spec.h"

struct error;
struct rng;
struct cluster;
struct device;

#define CLUSTER_MAX_GPUS    256
#define CLUSTER_STACK_BYTES (4u << 20) /* each device thread's stack */

struct cluster_config {
    struct cluster_spec spec;
    int gpus;          /* 1 to CLUSTER_MAX_GPUS */
    uint64_t seed;     /* device d's rng is rng_seed(seed, d) */
    double deadline_s; /* the longest host wait for one message; 0: 60 s */
    bool record_events;
    /* Sees each event as a device records it, on that device's thread: it must not block
     * (copy the event into a buffer of its own under a short lock, or drop it). */
    void (*on_event)(void *ctx, const struct event *ev);
    void *event_ctx;
    int fail_gpu, fail_step; /* dev_step(fail_step) on GPU fail_gpu fails; -1: never */
    /* NULL: every device is a thread here. Else the others are in other processes: only
     * device `local` runs here, and its messages travel over the wire. */
    const struct dev_wire *wire;
    int local;
};

/* Fills c with a 1-GPU default spec (spec_default), a 60 s deadline, no failure. */
void cluster_config_init(struct cluster_config *c);

struct cluster *cluster_new(const struct cluster_config *cfg, struct error *e);
void cluster_free(struct cluster *c);

/* Runs fn(device, arg, e) on every device in its own thread; 0, or the first failure. */
int cluster_run(struct cluster *c, int (*fn)(struct device *d, void *arg, struct error *e),
                void *arg, struct error *e);

/* Simulated time back to 0, counters and events cleared (memory stays allocated). */
void cluster_reset(struct cluster *c);

int cluster_size(const struct cluster *c);
struct device *cluster_device(struct cluster *c, int rank);
const struct cluster_spec *cluster_spec(const struct cluster *c);
/* The latest device clock: when the last device finished. */
double cluster_time(const struct cluster *c);
/* All recorded events merged in (t, device, seq) order; valid until the next run, reset or
 * free. Call between runs only. */
const struct event *cluster_events(struct cluster *c, size_t *n);

/* ---------------------------------------------------------------- one device */

struct dev_stats {
    uint64_t bytes_sent, bytes_received, msgs_sent, msgs_received;
    uint64_t bytes_combined; /* the part of bytes_received taken through a combine function */
};

/* What a message is part of, for events and --steps (phase is a static string), and the
 * stream it runs on (0 to DEV_STREAMS-1; see dev_join). */
struct dev_tag {
    int step, chunk;
    const char *phase;
    int stream;
};

#define DEV_STREAMS 4

/* A posted send. Lives with the sender (e.g. on its stack) until dev_wait returns. */
struct dev_req {
    struct dev_req *next; /* in the receiver's queue */
    const void *buf;
    size_t bytes;
    int from, to, state;
    int key;                           /* dev_isend_key's */
    double t_post, t_start, t_arrival; /* posted at, its bytes leave at, arrive at */
    enum time_msg kind;                /* what it carries, its sender's dev_time_msgs */
    enum time_msg queue_kind;          /* what held the sender's port while it queued */
    double timed_bytes, alphas;        /* what it is timed as (dev_time_msgs): m, 1 unless scaled */
    uint64_t msg;
    struct dev_tag tag;
    int slot; /* a wire's: where it keeps the send in flight */
};

/* Combines src into dst (bytes each), e.g. dst += src in some number format. */
typedef void (*dev_combine_fn)(void *dst, const void *src, size_t bytes, void *ctx);

/* How a device's messages reach devices in other processes (see the top of this file). Each
 * call is made by the device's thread; each wait has its own deadline, past which the wire
 * stops every process with a message naming the peer. */
struct dev_wire {
    void *ctx;
    /* Posts req (its header: bytes, key, times, tag) and its bytes to req->to; both stay the
     * sender's to read until done. Sets req->slot. */
    int (*post)(void *ctx, struct dev_req *req, struct error *e);
    /* Waits until the receiver took req: req->t_arrival becomes the arrival it booked. */
    int (*done)(void *ctx, struct dev_req *req, struct error *e);
    /* The next header from peer sent with key (any key when 0) into hdr (its from, to,
     * bytes, key, times, step and chunk; no buffer, no phase). */
    int (*head)(void *ctx, int peer, int key, struct dev_req *hdr, struct error *e);
    /* hdr's bytes (hdr->bytes of them) into buf, or combined into it (bytes must equal
     * hdr->bytes then); then the sender is told hdr->t_arrival. */
    int (*body)(void *ctx, const struct dev_req *hdr, void *buf, dev_combine_fn combine, void *cctx,
                struct error *e);
    /* Every process's `bytes` of mine, in rank order, into all: the run's own records (no
     * message of the simulated cluster: no time, no bytes counted). */
    int (*share)(void *ctx, const void *mine, size_t bytes, void *all, struct error *e);
    /* A device failed: says why->msg and ends every process (does not return). */
    void (*fail)(void *ctx, const struct error *why);
};

int dev_rank(const struct device *d);
int dev_count(const struct device *d);
const struct cluster_spec *dev_spec(const struct device *d);
struct ledger *dev_ledger(struct device *d);
struct rng *dev_rng(struct device *d);
struct cluster *dev_cluster(struct device *d);
struct dev_stats dev_stats(const struct device *d);

/* The device's simulated time, in seconds: the latest of its streams' clocks. */
double dev_now(const struct device *d);
/* Every stream waits for the others: their clocks become the latest one. */
void dev_join(struct device *d);
/* Joins the streams and advances them by seconds. */
void dev_advance(struct device *d, double seconds);
/* flops of work: the streams join, then advance by flops / peak; compute begin and end
 * events. */
void dev_compute(struct device *d, double flops, const char *name, int layer, int micro);
/* The same on one stream only, leaving the others alone: compute that overlaps communication
 * on another stream (e.g. the backward pass on stream 2 while stream 0 all-reduces the
 * gradients of the layers already done). */
void dev_compute_on(struct device *d, int stream, double flops, const char *name, int layer,
                    int micro);
/* The micro-batch the device's compute belongs to from now on, for the events of dev_compute
 * and dev_compute_on called with micro < 0 (a pipeline stage sets it before each operation;
 * 0 until then). */
void dev_set_micro(struct device *d, int micro);
/* Streams a and b wait for each other: both clocks become the later one. */
void dev_sync(struct device *d, int a, int b);
/* Stream `waiter` waits for what stream `on` has done so far (cudaStreamWaitEvent): its clock
 * becomes the later of the two; `on` is left alone. */
void dev_stream_wait(struct device *d, int waiter, int on);
/* The clock of one stream. */
double dev_stream_now(const struct device *d, int stream);

/* The messages the device sends from now on are timed as s says (sim/spec.h's struct
 * time_msg_scale: each stands for s.alphas messages of s.bytes times its bytes); returns the
 * scale before, for the caller to put back. {1, 1} until set. */
struct time_msg_scale dev_time_msgs(struct device *d, struct time_msg_scale s);

/* The time the device's compute stream (stream 0) has waited since the run began, by the kind
 * of message it waited for (sim/spec.h's enum time_msg, its sender's dev_time_msgs): wire[k]
 * for a message of kind k its sender had posted (its transfer), or that waited for the
 * sender's port while a message of kind k held it, or for another stream that last carried
 * kind k; peer[k] for a message of kind k not posted yet (its sender still busy: a pipeline's
 * bubble). The rest of the stream's time is its compute, and what dev_advance adds. */
void dev_waited(const struct device *d, double wire[TIME_MSGS], double peer[TIME_MSGS]);
/* When the device's latest compute ended (0 before any). */
double dev_compute_end(const struct device *d);

/* The device starts step `step` (of a collective or of training): 0, or ERR_RUN if the run
 * was aborted or this is the injected failure (--fail GPU@STEP). */
int dev_step(struct device *d, int step, struct error *e);
bool dev_aborted(const struct device *d);
/* Stops the whole run because of this device: records an EV_FAIL event, aborts the cluster
 * with "GPU d: MESSAGE" as the run's error (the first one wins), returns ERR_RUN. */
int dev_fail(struct device *d, struct error *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Posts bytes of buf to peer; the buffer stays the sender's to read, not to write, until
 * dev_wait(req). 0 or ERR_RUN (aborted) / ERR_INVAL (a bad peer). */
int dev_isend(struct device *d, int peer, const void *buf, size_t bytes, const struct dev_tag *tag,
              struct dev_req *req, struct error *e);
int dev_wait(struct device *d, struct dev_req *req, struct error *e);
/* The same with a key: dev_recv_key with the same key takes it, whatever came before it from
 * that GPU (as MPI's tags), where messages of several kinds share a pair of GPUs in orders the
 * two sides do not agree on (an interleaved pipeline's activations and gradients). */
int dev_isend_key(struct device *d, int peer, int key, const void *buf, size_t bytes,
                  const struct dev_tag *tag, struct dev_req *req, struct error *e);
/* Waits for the next message from peer and copies it into buf (combine NULL) or combines it
 * into buf; its size must be bytes. 0 or ERR_RUN (aborted, deadline, size mismatch). */
int dev_recv(struct device *d, int peer, void *buf, size_t bytes, const struct dev_tag *tag,
             dev_combine_fn combine, void *ctx, struct error *e);
/* The first message from peer sent with key (not 0) by dev_isend_key; no combine. */
int dev_recv_key(struct device *d, int peer, int key, void *buf, size_t bytes,
                 const struct dev_tag *tag, struct error *e);
/* dev_isend to `to`, dev_recv from `from`, dev_wait: one exchange step. sbuf and rbuf must not
 * overlap: the peer reads sbuf while this device's receive writes rbuf (a rendezvous copy). */
int dev_sendrecv(struct device *d, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                 size_t rbytes, const struct dev_tag *tag, dev_combine_fn combine, void *ctx,
                 struct error *e);

/* Waits until every device of the cluster has called it: host threads meeting, for timing
 * on the host (every GPU starts a timed collective together); the simulated clocks are left
 * alone. 0, or ERR_RUN (aborted, or the deadline passed); ERR_INVAL with a wire (the devices
 * are not threads of one process). */
int dev_barrier(struct device *d, struct error *e);

/* Records an event for this device (device, seq filled in; t is the caller's, usually
 * dev_now). For engines above sim (training steps, non-finite values). */
void dev_emit(struct device *d, struct event *ev);

#endif
