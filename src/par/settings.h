/* A training run's settings: struct train_opts, everything a run of the tiny GPT is told (the
 * model's shape, the batch, the optimizer, precision and loss scaling, clipping and spikes,
 * injected faults, and the layout of its GPUs); its defaults, PyTorch's and the lab's; the
 * tiny GPT's shape from a preset; and the table that reads each setting from text.
 *
 * The table is the one reader of a run's settings: `scalelab train --NAME VALUE` and a
 * window panel's NAME=VALUE (a lesson's @panel line, '_' for '-') parse a value with the same
 * code and the same bounds, and train's help is the table's. Each setting is checked alone
 * here, and those that need no layout together (settings_check); a run's whole check is
 * par/strategies.h's, each strategy checking how it splits the work. A panel adds its own
 * limits (the screen's room). */
#ifndef SCALELAB_PAR_SETTINGS_H
#define SCALELAB_PAR_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calc/sched.h"
#include "model/gpt.h"
#include "num/fp.h"

struct error;
struct model_shape;

/* The most GPUs a run has: the threads the host runs as GPUs (and the width of a step's
 * record, par/run.h). */
#define TRAIN_MAX_GPUS 64
/* The most steps a run is told to take (and the latest step an injection names). */
#define TRAIN_MAX_STEPS 10000000L

/* The lab's run: the model `scalelab train` and the panels train unless told, and its
 * learning rate (tiny learns within 300 steps at 3e-3; PyTorch's AdamW default, 1e-3, is
 * train_opts_default's). */
#define TRAIN_LAB_MODEL "tiny"
#define TRAIN_LAB_LR    3e-3

enum train_scaling { TRAIN_SCALE_NONE, TRAIN_SCALE_DYNAMIC, TRAIN_SCALE_STATIC };

/* The attention kernel (calc/activ.h's two): unless told, eager with cp 1 (the probabilities
 * kept, as lesson 2 counts them) and flash with cp > 1 (ring attention has no other); eager
 * with cp > 1 is refused (train_attention_check). */
enum train_attention { TRAIN_ATTN_DEFAULT, TRAIN_ATTN_EAGER, TRAIN_ATTN_FLASH };

/* --fp8-scales: TE's defaults (power-of-two for the block recipe, Float8BlockScaling's; fp32
 * quotients for the others), fp32 quotients, or powers of two (s_inv exact). */
enum { TRAIN_FP8_SCALES_RECIPE, TRAIN_FP8_SCALES_FP32, TRAIN_FP8_SCALES_POW2 };

enum train_inject_kind { TRAIN_INJECT_NAN, TRAIN_INJECT_INF, TRAIN_INJECT_SPIKE };

struct train_inject {
    enum train_inject_kind kind;
    long step;     /* 1-based, as the step field of the output */
    double factor; /* spike: the logits are multiplied by it */
    int gpu;       /* the GPU it happens on (0 unless given) */
};

#define TRAIN_MAX_INJECT 64

struct train_opts {
    struct gpt_config shape; /* train_shape's, from a preset */
    int batch;
    long steps;
    uint64_t seed;
    enum fp_format precision;
    /* --precision fp8 (precision bf16, every linear layer's GEMMs in fp8: model/gpt.h's
     * struct gpt_fp8): the recipe (FP8_OFF: not given, the delayed), the delayed recipe's
     * amax history and margin (0 and -1: TE's), the block recipe's tile (0: train_fp8's),
     * the scales (TRAIN_FP8_SCALES_*: the recipe's own unless given) */
    bool fp8;
    enum fp8_recipe fp8_recipe;
    int fp8_history, fp8_margin, fp8_block;
    int fp8_scales;
    struct ckpt_policy ckpt;
    double lr, beta1, beta2, eps, wd;
    enum train_scaling scaling;
    double scale;        /* the initial (dynamic) or fixed (static) loss scale */
    int growth_interval; /* dynamic: clean steps before the scale doubles */
    int hysteresis;      /* dynamic: overflowing steps before it halves */
    double clip;         /* max global norm; 0: no clipping */
    bool skip_spikes;
    int spike_window; /* losses in the z-score window */
    double spike_z;   /* a loss with z-score above this is a spike */
    struct train_inject inject[TRAIN_MAX_INJECT];
    int ninject;
    /* the layout (par/layout.h): gpus = dp x cp x tp x pp, the batch split over the dp */
    int gpus;                       /* every GPU of the run */
    int tp;                         /* tensor-parallel GPUs T per layer (1: none) */
    bool sp;                        /* sequence parallelism (with tp > 1) */
    int cp;                         /* context-parallel GPUs C per sequence (1: none) */
    bool cp_naive;                  /* cp: GPU i holds chunk i of C, not chunks i and 2C-1-i */
    enum train_attention attention; /* the kernel; train_flash says which runs */
    int ep;                         /* expert-parallel GPUs P sharing the experts (1: none),
                                       dividing the dp ranks (par/layout.h) */
    int pp;                         /* pipeline stages P (1: none) */
    int micro_batches;              /* M per step; the gradients add up over them */
    enum calc_schedule schedule;    /* the order of the stages' passes (calc/sched.h) */
    int chunks;                     /* v, model chunks per stage (interleaved) */
    /* data parallelism (par/dp.h) */
    int zero;            /* ZeRO stage 0 (DDP), 1, 2 or 3 */
    size_t bucket_bytes; /* a gradient bucket's size (PyTorch DDP's 25 MiB by default) */
    int prefetch;        /* ZeRO-3: gather the next unit while this one computes (0 or 1) */
    bool grad_fp32;      /* bf16/fp16: keep and reduce 4-byte gradients */
    /* a failure, to watch a run end cleanly */
    int fail_gpu; /* that GPU fails in step fail_step's gradient sync; -1: none */
    long fail_step;
};

/* The settings' checks that need no layout: ranges, a loss scale fp32 holds, a spike test
 * that can fire, injections and --fail within the run's steps and GPUs, a shape that is set,
 * fp32 gradients with a 16-bit precision. 0 or ERR_INVAL naming the option (the whole check of
 * a run is par/strategies.h's train_opts_check). */
int settings_check(const struct train_opts *o, struct error *e);

/* PyTorch's defaults (AdamW, GradScaler), batch 16, 300 steps, seed 1, fp32, one GPU, 25 MiB
 * buckets, prefetch on, one stage and one micro-batch (1F1B when more), and no shape: it stays
 * zeroed, and every caller sets it from the model it names (train_shape("tiny", &o->shape, e)
 * for the lessons' model). Every caller has a model to name anyway; a preset that cannot be
 * read is then reported where it is named, not later as a bad shape; and train_opts_check
 * refuses a shape that was never set. */
void train_opts_default(struct train_opts *o);

/* The lab's run: train_opts_default with the lab's learning rate and TRAIN_LAB_MODEL's shape,
 * the loss scaling its precision asks for. 0, or the preset's error. */
int train_opts_lab(struct train_opts *o, struct error *e);
/* The loss scaling a precision runs with unless one is asked for: dynamic for fp16 (PyTorch's
 * GradScaler; fp16's range needs it), none for bf16 and fp32. */
enum train_scaling train_scaling_for(enum fp_format precision);
/* The fp8 training a run's options ask for (recipe FP8_OFF without --precision fp8), TE's
 * defaults filled in (transformer_engine/common/recipe/__init__.py: DelayedScaling's history
 * 1024 and margin 0; Float8BlockScaling's power-of-two scales, which
 * NVTE_FP8_BLOCK_SCALING_FP32_SCALES=1 turns off; Float8CurrentScaling's fp32 ones); the block
 * recipe's tile, unless given, min(128, d_model / 2): DeepSeek-V3's and TE's 128 where the
 * model is that wide, two tiles a row on a smaller one (tiny: 32). */
struct gpt_fp8 train_fp8(const struct train_opts *o);

/* Whether the run's attention is the flash-style kernel (model/ringattn.h): asked for, or the
 * default with cp > 1. */
bool train_flash(const struct train_opts *o);

/* The tiny GPT's shape for a preset's (calc/preset.h): the only place a model_shape becomes
 * a gpt_config. The tiny GPT is LLaMA-like, so a shape it cannot train (a gelu feed-forward,
 * kv_heads != heads, untied embeddings) is refused: ERR_INVAL, "NAME: the tiny GPT trains
 * swiglu models with tied embeddings and kv_heads = heads", and *out zeroed. Whether the shape
 * fits the lab's limits is gpt_config_check's (train_opts_check calls it). */
int train_shape_of(const struct model_shape *m, struct gpt_config *out, struct error *e);
/* The load-balancing loss's coefficient a shape with experts gets (train --aux-loss-coef). */
#define TRAIN_AUX_COEF 0.01
/* The same from a preset name ("tiny") or an INI file path: preset_load_model's errors, or
 * train_shape_of's. */
int train_shape(const char *model, struct gpt_config *out, struct error *e);

struct setting;
/* Reads value into o: said is the setting as its reader names it in messages ("--lr" for
 * train, "lr" for a panel); value is NULL for a switch given on train's command line. 0 or
 * ERR_INVAL saying what is allowed. */
typedef int (*setting_parser)(const struct setting *s, const char *said, const char *value,
                              struct train_opts *o, struct error *e);

/* A setting of a run: a line of the table. */
struct setting {
    const char *name;  /* train's --NAME; a panel's NAME=VALUE, '_' for '-' */
    const char *alias; /* the name a panel knew it by before (scale, growth, policy), or NULL */
    const char *arg;   /* the value in the help ("B"); NULL: a switch (a panel's on|off) */
    setting_parser parse;
    size_t field;     /* offsetof(struct train_opts, the field), for the shared parsers */
    double min, max;  /* a number's bounds, for the shared parsers */
    bool repeat;      /* each value adds one (--inject), not the last wins */
    const char *help; /* what it does and allows, and its default: "\n" starts a line */
};

/* The table, in the order train's help lists it, ending with a NULL name. */
extern const struct setting train_settings[];
/* The setting named name (its name, with '_' or '-', or its alias), or NULL. */
const struct setting *settings_find(const char *name);
/* Sets the setting name (as settings_find takes it) to value in o; 0, or ERR_INVAL for an
 * unknown setting or a value it does not take, saying why. */
int settings_set(struct train_opts *o, const char *name, const char *value, struct error *e);

#endif
