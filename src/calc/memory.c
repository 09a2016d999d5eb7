/* Memory per GPU for a layout: model states after tensor, pipeline and ZeRO partitioning,
 * activations in flight, communication buffers (calc/memory.h). */
#include "config.h"
#include "calc/memory.h"

#include <math.h>
#include <string.h>

#include "base/error.h"
#include "base/experts.h"
#include "calc/params.h"
#include "calc/sched.h"
#include "num/fp.h"

int memory_parse_optimizer(const char *s, enum calc_optimizer *out, struct error *e)
{
    if (s && !strcmp(s, "adamw"))
        *out = OPT_ADAMW;
    else if (s && !strcmp(s, "sgd"))
        *out = OPT_SGD;
    else if (s && !strcmp(s, "sgd-momentum"))
        *out = OPT_SGD_MOMENTUM;
    else
        return error_set(e, ERR_INVAL, "'%s' is not an optimizer (use adamw, sgd or sgd-momentum)",
                         s ? s : "");
    return 0;
}

const char *memory_optimizer_name(enum calc_optimizer o)
{
    return o == OPT_ADAMW ? "adamw" : o == OPT_SGD ? "sgd" : "sgd-momentum";
}

void memory_bytes_per_param(enum fp_format prec, enum calc_optimizer opt, bool grad_fp32,
                            struct memory_states *out)
{
    const struct fp_precision *p = fp_precision(prec);
    bool mixed = p && p->mixed;
    out->weights = fp_bytes(prec);
    out->gradients = mixed && !grad_fp32 ? fp_bytes(prec) : 4;
    out->master = mixed ? 4 : 0; /* fp32 weights are their own master copy */
    out->optimizer = opt == OPT_ADAMW ? 8 : opt == OPT_SGD_MOMENTUM ? 4 : 0;
}

void memory_zero(double psi, const struct memory_states *k, int zero, int nd,
                 struct memory_states *out)
{
    /* the flat buffers are padded to nd ceil(psi/nd): a shard is ceil(psi/nd) (par/shard.h) */
    double S = nd > 1 ? ceil(psi / nd) : psi, full = S * (nd > 1 ? nd : 1);
    out->weights = (zero >= 3 ? S : full) * k->weights;
    out->gradients = (zero >= 2 ? S : full) * k->gradients;
    out->master = (zero >= 1 ? S : full) * k->master;
    out->optimizer = (zero >= 1 ? S : full) * k->optimizer;
}

double memory_comm(const struct memory_config *c, const struct params_breakdown *pb, double psi,
                   int layers, bool first, bool last)
{
    struct memory_states k;
    memory_bytes_per_param(c->precision, c->optimizer, c->grad_fp32, &k);
    int nd = memory_grad_ranks(c);
    if (!pb) /* a bare count: the textbook's model states alone */
        return 0;
    double S = nd > 1 ? ceil(psi / nd) : psi, pad = S * (nd > 1 ? nd : 1) - psi;
    double g = k.gradients, w = k.weights;
    if (c->zero == 2) { /* two buckets: one reduced while the next fills */
        double cap = floor((c->bucket_bytes > 0 ? c->bucket_bytes : MEMORY_BUCKET) / g);
        if (cap < 1)
            cap = 1;
        return 2 * fmin(cap, psi + pad) * g;
    }
    if (c->zero < 3)
        return 0;
    /* ZeRO-3: two gradient pieces (the embedding, a layer, the final norm and padding), and
     * the gathered units: the ends (embedding, final norm, padding) or a layer, two of them
     * at once with prefetch */
    double first_tp, lyr; /* a tensor-parallel rank's shards */
    params_shards(pb, c->tp, &first_tp, &lyr);
    double ends = psi + pad - layers * lyr;
    int per = c->unit_layers > 1 ? (c->unit_layers < layers ? c->unit_layers : layers) : 1;
    double unit = per * lyr; /* the largest unit of layers */
    double e_piece = first ? first_tp : 0, f_piece = ends - e_piece;
    double piece = fmax(fmax(e_piece, f_piece), layers > 0 ? unit : 0);
    double gathered;
    if (c->no_prefetch || layers == 0)
        gathered = fmax(ends, unit);
    else
        gathered = layers > per ? fmax(ends + unit, 2 * unit) : ends + unit;
    (void)last;
    return 2 * piece * g + gathered * w;
}

int memory_in_flight(enum calc_schedule sched, int stage, int pp, int m)
{
    if (pp <= 1)
        return 1;
    if (sched == SCHED_GPIPE)
        return m;
    int most = sched == SCHED_ZBH2 ? 2 * (pp - stage) - 1 : pp - stage; /* calc/sched.h */
    return most < m ? most : m;
}

/* The activations' view of a layout: one micro-batch on one GPU. */
static void add_states(struct memory_states *sum, const struct memory_states *x)
{
    sum->weights += x->weights, sum->gradients += x->gradients;
    sum->master += x->master, sum->optimizer += x->optimizer;
}

static struct activ_config activ_of(const struct memory_config *c)
{
    return (struct activ_config){.micro_batch = c->micro_batch,
                                 .seq = c->seq,
                                 .tp = c->tp,
                                 .sp = c->sp,
                                 .bytes = fp_bytes(c->precision),
                                 .cp = c->cp,
                                 .cp_naive = c->cp_naive,
                                 .attention = c->attention,
                                 .ep = c->ep,
                                 .ep_rows = c->ep_rows,
                                 .ep_uniform = c->ep_uniform};
}

double memory_ep_experts(const struct memory_config *c)
{
    const struct model_shape *m = c->model;
    if (!m || !m->experts)
        return 0;
    int ep = c->ep > 1 ? c->ep : 1;
    return (double)params_moe_layers(m, 0, m->layers) * (m->experts / ep) * 3.0 * m->d_model *
           m->ffn;
}

double memory_ep_rows(const struct memory_config *c)
{
    const struct model_shape *m = c->model;
    double n = (double)c->micro_batch * c->seq;
    return m && m->experts ? experts_rows(n, m->experts, m->top_k, m->capacity_factor) : 0;
}

bool memory_ep_dropless(const struct memory_config *c)
{
    return c->ep > 1 && c->model && c->model->experts && !(c->model->capacity_factor > 0);
}

double memory_ep_buffers_at(const struct memory_config *c, bool worst)
{
    if (c->ep <= 1 || !c->model)
        return 0;
    const struct model_shape *m = c->model;
    double p = (double)m->d_model * fp_bytes(c->precision);
    if (!memory_ep_dropless(c))
        return 2 * memory_ep_rows(c) * p;
    double n = (double)c->micro_batch * c->seq;
    double in = worst ? experts_rows_held(n, m->experts, m->top_k, 0, c->ep) : m->top_k * n;
    return (m->top_k * n + in) * p;
}

double memory_ep_buffers(const struct memory_config *c)
{
    return memory_ep_buffers_at(c, true);
}

double memory_ep_buffers_held(const struct memory_config *c)
{
    if (!(memory_ep_dropless(c) && c->ep_held > 0))
        return memory_ep_buffers(c);
    return c->ep_held * c->model->d_model * fp_bytes(c->precision);
}

/* psi parameters' states, expert parallelism's experts sharded over their own group. */
static void states_of(const struct memory_config *c, double psi, const struct memory_states *k,
                      struct memory_states *out)
{
    double x = c->ep > 1 ? memory_ep_experts(c) : 0;
    memory_zero(psi - x, k, c->zero, memory_grad_ranks(c), out);
    if (x > 0) {
        struct memory_states xs;
        memory_zero(x, k, c->zero, c->dp / c->ep, &xs);
        add_states(out, &xs);
    }
}

int memory_grad_ranks(const struct memory_config *c)
{
    return c->dp * (c->cp > 1 ? c->cp : 1);
}

double memory_cp_buffers(const struct memory_config *c)
{
    if (!c->model || c->cp <= 1)
        return 0;
    const struct model_shape *m = c->model;
    double kv = (double)m->kv_heads / m->heads * m->d_model / c->tp; /* a GPU's K or V width */
    int p = fp_bytes(c->precision);
    return 2 * 4 * (double)c->micro_batch * (c->seq / c->cp) * kv * p;
}

int memory_check(const struct memory_config *c, struct error *e)
{
    if (c->dp < 1 || c->tp < 1 || c->pp < 1 || c->cp < 0)
        return error_set(e, ERR_INVAL, "dp, tp, cp and pp must be at least 1");
    if (c->unit_layers < 0)
        return error_set(e, ERR_INVAL, "unit_layers %d: a count of layers", c->unit_layers);
    if (c->zero < 0 || c->zero > 3)
        return error_set(e, ERR_INVAL, "zero %d: the ZeRO stage is 0, 1, 2 or 3", c->zero);
    if (c->micro_batch < 1 || c->seq < 1 || c->micro_batches < 1)
        return error_set(e, ERR_INVAL, "micro-batch, seq and micro-batches must be at least 1");
    if (c->schedule == SCHED_INTERLEAVED && c->chunks < 2)
        return error_set(e, ERR_INVAL, "chunks %d: the interleaved schedule needs 2 or more",
                         c->chunks);
    if (c->schedule == SCHED_ZBV) {
        int rc = sched_check(SCHED_ZBV, c->pp, c->micro_batches, 2, e);
        if (rc)
            return rc;
        if (c->model && c->model->layers % (2 * c->pp) != 0)
            return error_set(e, ERR_INVAL,
                             "schedule zbv: 2 chunks a stage x pp %d does not divide the %d "
                             "layers of %s",
                             c->pp, c->model->layers, c->model->name);
    }
    if (c->schedule == SCHED_INTERLEAVED) {
        int rc = sched_check(SCHED_INTERLEAVED, c->pp, c->micro_batches, c->chunks, e);
        if (rc)
            return rc;
        if (c->model && c->model->layers % (c->pp * c->chunks) != 0)
            return error_set(e, ERR_INVAL, "pp %d x chunks %d does not divide the %d layers of %s",
                             c->pp, c->chunks, c->model->layers, c->model->name);
    }
    if (!(c->capacity > 0) || !isfinite(c->capacity))
        return error_set(e, ERR_INVAL, "capacity must be a size above 0");
    if (!c->model) {
        if (c->ep > 1)
            return error_set(e, ERR_INVAL, "ep %d needs a model with experts, not a count", c->ep);
        if (!(c->params >= 1) || !isfinite(c->params))
            return error_set(e, ERR_INVAL, "params must be a count of at least 1");
        return 0;
    }
    if (c->pp > c->model->layers)
        return error_set(e, ERR_INVAL, "pp %d is more than the %d layers of %s (at most %d)", c->pp,
                         c->model->layers, c->model->name, c->model->layers);
    /* experts are whole on each GPU here: no expert split by tensor parallelism, and ZeRO-3's
     * gathered units are counted for dense layers */
    if (c->model->experts > 0 && (c->tp > 1 || c->zero == 3))
        return error_set(e, ERR_INVAL,
                         "%s has experts: the calculator counts them with tp 1 and ZeRO 0 to 2, "
                         "not tp %d, ZeRO %d",
                         c->model->name, c->tp, c->zero);
    if (c->ep > 1) { /* each condition by itself: the message names the one that failed */
        if (!c->model->experts || c->model->experts % c->ep)
            return error_set(e, ERR_INVAL,
                             "ep %d: expert parallelism needs a model with experts it divides "
                             "(%s has %d)",
                             c->ep, c->model->name, c->model->experts);
        if (c->dp % c->ep)
            return error_set(e, ERR_INVAL,
                             "ep %d: expert parallelism shares the experts over the data-parallel "
                             "GPUs: dp must be a multiple of it (not %d)",
                             c->ep, c->dp);
        if (c->pp > 1)
            return error_set(e, ERR_INVAL,
                             "ep %d with pp %d: the calculator counts expert parallelism on one "
                             "stage",
                             c->ep, c->pp);
    }
    if (c->model->experts > 0 && sched_splits(c->schedule))
        return error_set(e, ERR_INVAL,
                         "%s has experts: schedule %s runs B and W apart, which the calculator "
                         "(and the model) count for dense layers only",
                         c->model->name, sched_name(c->schedule));
    if (c->model->experts > 0 && c->cp > 1)
        return error_set(e, ERR_INVAL,
                         "%s has experts: the calculator counts them without context "
                         "parallelism, not cp %d",
                         c->model->name, c->cp);
    struct activ_config ac = activ_of(c);
    return activ_check(c->model, &ac, e);
}

/* zbv's walk of stage s's operations (zb_activations' over each chunk's own bytes). */
static double zbv_walk(const struct sched *sc, int s, const struct activ_total *at,
                       const double *bpeak, const double *wset)
{
    double held = 0, most = 0;
    for (int i = 0; i < sc->count[s]; i++) {
        int k = sc->ops[s][i].chunk;
        if (sc->ops[s][i].kind == SCHED_OP_F) {
            most = fmax(most, held + at[k].saved);
            held += at[k].saved;
        } else if (sc->ops[s][i].kind == SCHED_OP_B) {
            most = fmax(most, held - at[k].saved + bpeak[k]);
            held += wset[k] - at[k].saved;
        } else
            held -= wset[k];
    }
    return most;
}

/* Interleaved: stage s holds virtual stages c p + s, c < v (see above); zbv the V's s and 2p -
 * 1 - s (calc/sched.h), with B and W apart. */
static void stage_fill_chunks(const struct memory_config *c, const struct params_breakdown *pb,
                              int s, struct memory_result *out)
{
    const struct model_shape *m = c->model;
    int v = sched_chunks(c->schedule, c->chunks), pv = c->pp * v, per = m->layers / pv;
    struct activ_config ac = activ_of(c);
    struct activ_total at[SCHED_MAX_CHUNKS];
    double psi = 0, bpeak[SCHED_MAX_CHUNKS], wset[SCHED_MAX_CHUNKS];
    bool first = false, last = false;
    memset(&out->states, 0, sizeof out->states);
    for (int k = 0; k < v; k++) {
        int vs = sched_vstage(c->schedule, c->pp, s, k);
        double p = params_per_gpu(pb, m->layers, vs, pv, c->tp, m->tied);
        struct memory_states one;
        memory_zero(p, &out->per_param, c->zero, memory_grad_ranks(c), &one);
        add_states(&out->states, &one);
        psi += p;
        first |= vs == 0, last |= vs == pv - 1;
        activ_total_at(m, &ac, &c->ckpt, vs * per, per, vs == 0, vs == pv - 1, &at[k]);
        wset[k] = per * activ_wgrad_bytes(m, &ac);
        bpeak[k] = activ_split_peak(m, &ac, &c->ckpt, per, at[k].saved);
    }
    struct sched sc;
    double held = 0, most = 0;
    if (sched_build(c->schedule, c->pp, c->micro_batches, v, &sc, NULL) == 0) {
        for (int i = 0; i < sc.count[s] && !sched_splits(c->schedule); i++) {
            const struct activ_total *a = &at[sc.ops[s][i].chunk];
            int change = sched_held_change(sc.ops[s][i].kind);
            if (change > 0) {
                most = fmax(most, held + a->peak);
                held += a->saved;
            } else if (change < 0) {
                held -= a->saved;
                most = fmax(most, held + a->peak);
            }
        }
        if (sched_splits(c->schedule)) {
            most = zbv_walk(&sc, s, at, bpeak, wset);
            out->wset = wset[0];
            out->w_held = sched_wslots(&sc, s, 0) + sched_wslots(&sc, s, 1);
        }
        out->in_flight = sc.peak_chunks[s];
        sched_free(&sc);
    }
    out->act = at[0];
    out->activations = most;
    out->comm = memory_comm(c, pb, psi, per * v, first, last) + memory_cp_buffers(c);
    out->params_gpu = psi;
    out->stage = s;
    out->stage_layers = per * v;
    out->total = out->states.weights + out->states.gradients + out->states.master +
                 out->states.optimizer + out->activations + out->comm;
}

/* zb-h1 (calc/sched.h): the most stage s's activations reach, walking its operations as
 * model/gpt.h charges them: a forward adds its saved bytes; a B peaks at bpeak over the rest
 * (calc/activ.h's activ_split_peak: each layer's W tensors booked as its backward begins) and
 * leaves wset for its saved bytes; a W releases wset. */
static double zb_activations(const struct memory_config *c, int s, const struct activ_total *a,
                             double bpeak, double wset, int *w_held)
{
    struct sched sc;
    double held = 0, most = 0;
    if (sched_build(c->schedule, c->pp, c->micro_batches, 1, &sc, NULL))
        return 0;
    *w_held = sched_wslots(&sc, s, 0);
    for (int i = 0; i < sc.count[s]; i++) {
        enum sched_op_kind k = sc.ops[s][i].kind;
        if (k == SCHED_OP_F) {
            most = fmax(most, held + a->saved);
            held += a->saved;
        } else if (k == SCHED_OP_B) {
            most = fmax(most, held - a->saved + bpeak);
            held += wset - a->saved;
        } else
            held -= wset;
    }
    sched_free(&sc);
    return most;
}

/* The states and activations of one GPU of pipeline stage s (shape given). */
static void stage_fill(const struct memory_config *c, const struct params_breakdown *pb, int s,
                       struct memory_result *out)
{
    if (c->schedule == SCHED_INTERLEAVED || c->schedule == SCHED_ZBV) {
        stage_fill_chunks(c, pb, s, out);
        return;
    }
    const struct model_shape *m = c->model;
    int first, count;
    params_stage_layers(m->layers, s, c->pp, &first, &count);
    double psi = params_per_gpu(pb, m->layers, s, c->pp, c->tp, m->tied);
    if (c->ep > 1) /* the experts of the other expert ranks */
        psi -= memory_ep_experts(&(struct memory_config){.model = m}) - memory_ep_experts(c);
    struct activ_config ac = activ_of(c);
    states_of(c, psi, &out->per_param, &out->states);
    activ_total_at(m, &ac, &c->ckpt, first, count, s == 0, s == c->pp - 1, &out->act);
    out->in_flight = memory_in_flight(c->schedule, s, c->pp, c->micro_batches);
    out->activations = (out->in_flight - 1) * out->act.saved + out->act.peak;
    if (sched_splits(c->schedule) && c->pp > 1) {
        out->wset = count * activ_wgrad_bytes(m, &ac);
        double bpeak = activ_split_peak(m, &ac, &c->ckpt, count, out->act.saved);
        out->activations = zb_activations(c, s, &out->act, bpeak, out->wset, &out->w_held);
    }
    out->comm = memory_comm(c, pb, psi, count, s == 0, s == c->pp - 1) + memory_cp_buffers(c) +
                memory_ep_buffers_held(c);
    out->params_gpu = psi;
    out->stage = s;
    out->stage_layers = count;
    out->total = out->states.weights + out->states.gradients + out->states.master +
                 out->states.optimizer + out->activations + out->comm;
}

static void finish(const struct memory_config *c, struct memory_result *out)
{
    out->capacity = c->capacity;
    out->fits = out->total <= c->capacity;
    out->over = out->fits ? 0 : out->total - c->capacity;
}

int memory_compute_stage(const struct memory_config *c, int stage, struct memory_result *out,
                         struct error *e)
{
    int rc = memory_check(c, e);
    if (rc < 0)
        return rc;
    if (!c->model || stage < 0 || stage >= c->pp)
        return error_set(e, ERR_INVAL, "stage %d: a shaped model has stages 0 to %d", stage,
                         c->pp - 1);
    memset(out, 0, sizeof *out);
    memory_bytes_per_param(c->precision, c->optimizer, c->grad_fp32, &out->per_param);
    struct params_breakdown pb;
    params_count(c->model, &pb);
    out->params = pb.total;
    struct activ_config ac = activ_of(c);
    activ_layer(c->model, &ac, &out->layer);
    stage_fill(c, &pb, stage, out);
    finish(c, out);
    return 0;
}

int memory_compute(const struct memory_config *c, struct memory_result *out, struct error *e)
{
    int rc = memory_check(c, e);
    if (rc < 0)
        return rc;
    memset(out, 0, sizeof *out);
    memory_bytes_per_param(c->precision, c->optimizer, c->grad_fp32, &out->per_param);
    out->in_flight = 1;
    if (!c->model) {
        /* A bare count: the textbook division by tp x pp, no activations. */
        out->params = c->params;
        out->params_gpu = c->params / ((double)c->tp * c->pp);
        memory_zero(out->params_gpu, &out->per_param, c->zero, memory_grad_ranks(c), &out->states);
        out->comm = memory_comm(c, NULL, out->params_gpu, 0, false, false);
        out->total = out->states.weights + out->states.gradients + out->states.master +
                     out->states.optimizer + out->comm;
    } else {
        struct params_breakdown pb;
        params_count(c->model, &pb);
        out->params = pb.total;
        struct activ_config ac = activ_of(c);
        activ_layer(c->model, &ac, &out->layer);
        struct memory_result st = *out;
        out->total = -1;
        for (int s = 0; s < c->pp; s++) {
            stage_fill(c, &pb, s, &st);
            if (st.total > out->total)
                *out = st;
        }
    }
    finish(c, out);
    return 0;
}
