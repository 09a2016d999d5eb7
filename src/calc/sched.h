/* Pipeline schedules as data: which stage runs the forward or backward pass of which
 * micro-batch (and model chunk) in which time slot. The real pipeline runs (src/par) execute
 * each stage's list of operations in this order; the Gantt charts draw it.
 *
 * Schedules, for p stages and m micro-batches:
 *   gpipe        every stage runs all m forwards, then the m backwards in reverse order
 *                (Huang et al. 2019, "GPipe"); each stage holds all m micro-batches.
 *   1f1b         PipeDream-Flush (Narayanan et al. 2021, "Memory-Efficient Pipeline-Parallel
 *                DNN Training"): stage s runs min(p - s - 1, m) warm-up forwards, then
 *                alternates one forward and one backward, then drains the backwards; it holds
 *                at most p - s micro-batches.
 *   interleaved  Megatron-LM's interleaved 1F1B (Narayanan et al. 2021, "Efficient
 *                Large-Scale Language Model Training on GPU Clusters", §2.2): each stage holds
 *                v model chunks (virtual stage c p + s); forwards go through groups of p
 *                micro-batches chunk by chunk; stage s warms up with 2(p - s - 1) + (v - 1) p
 *                chunk forwards. m must be a multiple of p.
 *   zb-h1        ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR, §3.1): each
 *                backward split into B (the input's gradient) and W (the weights'); 1F1B's
 *                warm-up and steady state with B in the backward's place, stage s running each
 *                W s backwards after its B, and the W left over at the end: they fill the
 *                cool-down the B's no longer wait in. Stage s holds at most p - s micro-batches
 *                between F and B (1F1B's) and s between B and W, whose W set is smaller (the
 *                paper: peak memory p M_B, 1F1B's).
 *   zb-h2        ZB-H2 (Qi et al. 2024, §3.1): the same F, B and W at twice ZB-H1's memory, a
 *                stage holding up to 2p micro-batches between their F and their W (the paper's
 *                2p M_B), which lets the warm-up run 2(p - s) - 1 forwards into the time its
 *                first B waits for and the tail end in W's: each stage computes without a gap
 *                from its first operation to its last (a parallelogram, m >= 2p - 1). The order
 *                is found as the paper's heuristic finds one (§3.2), slot by slot: a B as soon
 *                as its gradient is in, else a forward while the stage holds fewer than 2p,
 *                else the oldest W.
 *   zbv          ZB-V (Qi et al. 2024, §6; torch.distributed.pipelining's ScheduleZBVZeroBubble):
 *                B and W apart and two chunks a stage in a V, stage s holding virtual stages
 *                s and 2p - 1 - s, so the first and the last virtual stage (the embedding and
 *                the head) are both stage 0's. Stage s runs 2(p - s) - 1 forwards of chunk 0,
 *                then s pairs (chunk 1's forward, chunk 0's), then p - s times chunk 1's F, B
 *                and W; the steady state F, B, W of chunk 0 then of chunk 1 while forwards are
 *                left; the cool-down s pairs of B (chunk 0's, chunk 1's), p - s of chunk 0's B
 *                and W, then the W left, chunk 1's first. The order is laid out as if m were at
 *                least 2p - 1 and the micro-batches beyond m dropped. Each stage holds 2p
 *                chunks between F and B (1F1B's p micro-batches of stage 0, at half the
 *                layers: 1F1B's memory), and with F = B = W computes without a gap from its
 *                first operation to its last once m >= 2p - 1.
 *
 * Time: a chunk's forward takes TF = 1 slot and its backward TB = 2 slots (the backward pass
 * costs about twice the forward: 4 of the 6 FLOPs per parameter and token); with v chunks a
 * stage's whole forward is v slots. Split (zb-h1), B takes TB - TW = 1 and W TW = 1: the
 * input's and the weights' gradients cost a matmul each. Sends take no time. Each operation starts
 * when its stage is free and its input is ready (the previous virtual stage's forward of the same
 * micro-batch; the next virtual stage's backward), so the timeline follows from the order.
 *
 * Bubble (the time stages sit idle), in the two definitions in use:
 *   over ideal compute time  (p - 1) / (v m)          (Narayanan et al. 2021, eq. in §2.2)
 *   over wall time           (p - 1) / (v m + p - 1)  (the idle share of the whole step)
 * GPipe and 1F1B have the same bubble and differ in peak memory. In times of F, B and W (B
 * the input's gradient alone), 1F1B's bubble is (p - 1)(F + B + W) a stage, ZB-H1's (p - 1)(F
 * + B - W) (Qi et al. 2024, §3.1; m >= p): a third of it when the three are equal; ZB-H2's
 * (p - 1)(F + B - 2W), none when 2W covers F + B (m >= 2p - 1).
 *
 * The paper counts a stage's bubble between its own first and last operation (span_idle). For
 * every schedule but zb-h2 that is the step's idle time too (stage 0 starts the step and ends
 * it); zb-h2's parallelogram leaves stage s's first s slots and the last stages' ends apart, so
 * a step that ends in one synchronized optimizer step still spans p - 1 forwards more than a
 * stage's work (the paper removes that with its post-validation of the optimizer, §4). */
#ifndef SCALELAB_CALC_SCHED_H
#define SCALELAB_CALC_SCHED_H

#include <stdbool.h>

struct error;

enum calc_schedule {
    SCHED_GPIPE,
    SCHED_1F1B,
    SCHED_INTERLEAVED,
    SCHED_ZBH1,
    SCHED_ZBH2,
    SCHED_ZBV
};
enum { SCHED_KINDS = SCHED_ZBV + 1 };

enum { SCHED_TF = 1, SCHED_TB = 2, SCHED_TW = 1 };
enum { SCHED_MAX_STAGES = 64, SCHED_MAX_MICRO = 1024, SCHED_MAX_CHUNKS = 16 };

/* What an operation runs on a micro-batch's chunk: its forward pass (F), its backward pass (B:
 * the input's gradient, and the weights' too unless the schedule runs them apart), or its
 * weights' gradients apart (W: a zero-bubble schedule's, Qi et al. 2024, which split B so that
 * W fills the bubble: zb-h1). */
enum sched_op_kind { SCHED_OP_F, SCHED_OP_B, SCHED_OP_W, SCHED_OP_KINDS };

/* A kind's letter in the charts and JSON ('F', 'B', 'W'), its name in events and traces
 * ("forward", "backward", "weight gradients") and the slots it takes (TF, TB, TW). */
struct sched_op_info {
    char letter;
    const char *name;
    int slots;
};
const struct sched_op_info *sched_op_info(enum sched_op_kind k);
/* The kind of a letter or a name (sched_op_info's); SCHED_OP_KINDS for none. */
enum sched_op_kind sched_op_kind_of(const char *name);

struct sched_op {
    enum sched_op_kind kind;
    int micro, chunk;
    int start, duration; /* in slots */
};

struct sched {
    enum calc_schedule kind;
    int p, m, v;
    int *count;            /* operations per stage, as built */
    struct sched_op **ops; /* ops[s][i]: stage s's operations in the order it runs them */
    int makespan;          /* slots from the first forward to the last backward */
    double busy;           /* slots one stage computes: its operations' */
    double bubble_over_ideal, bubble_over_wall; /* measured on the timeline */
    int span_idle;    /* most slots a stage idles between its first and its last operation */
    int *peak_chunks; /* per stage: most (micro-batch, chunk) pairs held at once */
};

/* How an operation of a kind changes the micro-batches (and chunks) its stage holds between
 * their forward and their backward: +1 at a forward, -1 at B, 0 at W (the in-flight count of
 * the charts and the peaks). */
int sched_held_change(enum sched_op_kind kind);

/* Whether the schedule runs W apart from B (zb-h1, zb-h2, zbv). */
bool sched_splits(enum calc_schedule k);
/* The virtual stage chunk `chunk` of stage `stage` runs: c p + s, or zbv's V (s, then 2p - 1 -
 * s); and the stage that runs virtual stage vs. */
int sched_vstage(enum calc_schedule k, int p, int stage, int chunk);
int sched_stage_of(enum calc_schedule k, int p, int vs);
/* The model chunks a stage of schedule k holds: chunks for interleaved, 2 for zbv, else 1. */
int sched_chunks(enum calc_schedule k, int chunks);
/* The slots an operation of a kind takes in a schedule: sched_op_info's, but TB - TW for a B
 * whose W runs apart. */
int sched_op_slots(enum calc_schedule k, enum sched_op_kind kind);
/* Most micro-batches of chunk `chunk` stage `stage` holds between B and W at once (what its B
 * keeps for W: model/gpt.h's weight slots); 0 for a schedule that does not split. */
int sched_wslots(const struct sched *s, int stage, int chunk);

/* The bubble's time in a step of `compute` seconds of work per GPU, as this schedule's
 * timeline has it: compute x its idle slots per stage over its busy ones, counted in whole
 * passes (a forward and a backward) so that the classic schedules give compute (p - 1) /
 * (v m) exactly. */
double sched_bubble_time(const struct sched *s, double compute);

int sched_parse(const char *s, enum calc_schedule *out, struct error *e);
const char *sched_name(enum calc_schedule k);

/* Checks p, m, v (v is 1 except for interleaved, which needs v >= 2 and p | m, and zbv, which
 * needs v = 2 and p >= 2). */
int sched_check(enum calc_schedule k, int p, int m, int v, struct error *e);

/* Builds and times the schedule; sched_free releases it. ERR_INVAL for bad sizes, ERR_NOMEM. */
int sched_build(enum calc_schedule k, int p, int m, int v, struct sched *out, struct error *e);
void sched_free(struct sched *s);

/* The formulas above: GPipe's, 1F1B's and interleaved's. */
double sched_bubble_over_ideal(int p, int m, int v);
double sched_bubble_over_wall(int p, int m, int v);
/* Schedule k's: the above, or zb-h1's (p - 1)(TF + (TB - TW) - TW) idle slots a stage over its
 * m (TF + TB) busy ones (and over their sum), or zb-h2's (p - 1)(TF + (TB - TW) - 2 TW): none. */
double sched_formula_over_ideal(enum calc_schedule k, int p, int m, int v);
double sched_formula_over_wall(enum calc_schedule k, int p, int m, int v);
/* zb-h1's idle time over its compute for F, B and W of times f, b and w (a micro-batch's on a
 * stage): (p - 1)(f + b - w) / (m (f + b + w)) (Qi et al. 2024, §3.1; m >= p, f + b >= w); the
 * slots' f = b = w give sched_formula_over_ideal's. */
double sched_zb_over_ideal(int p, int m, double f, double b, double w);
/* Schedule k's idle time a stage over its compute for F, B and W of times f, b and w (B the
 * input's gradient alone; a schedule that does not split runs b + w as its backward): 1F1B's
 * and GPipe's (p - 1)(f + b + w), zb-h1's (p - 1)(f + b - w), zb-h2's (p - 1) max(0, f + b -
 * 2w), over m (f + b + w) (Qi et al. 2024, §3.1); interleaved's over v m (f + b + w); zbv's
 * zb-h2's in a chunk's times over v m (f + b + w), none with F = B = W (its timeline's). */
double sched_formula_times(enum calc_schedule k, int p, int m, int v, double f, double b, double w);

#endif
