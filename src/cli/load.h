/* load.h: the commands' models loaded as their options say: precision, frozen or
 * trainable, LoRA adapters, heads checked; the line that names their kernels. */
#ifndef PPA_CLI_LOAD_H
#define PPA_CLI_LOAD_H

#include "model/lora.h"
#include "model/model.h"
#include "options/options.h"

/* Loads the command's model in its --precision: trainable (float32 master
 * weights and a bf16 copy, --gradient-checkpointing) or frozen (bf16 weights
 * only). Dies with "CMD: message" (exit 2), e.g. on a CPU without bf16. The
 * causal-LM commands refuse a reward model; `ppa reward` wants one, or takes
 * a causal LM and gives it a head (model_load_reward). */
Model *load_model(const TrainOptions *o, const char *dir, int trainable);
/* LoRA (model/lora.h): with --lora-r (train, sft, grad) or --adapter, the
 * model of load_model is a frozen base (bf16 weights only with --precision
 * bf16) carrying a new seeded adapter or --adapter's; load_frozen loads a
 * plain frozen model (a reference: never an adapter). */
Model *load_frozen(const TrainOptions *o, const char *dir);
/* train's policy: --model, or the --resume checkpoint (an adapter folder on --model for a LoRA run) */
Model *load_policy(const TrainOptions *o);
/* the folder whose config.json the policy of load_policy has (the checkpoint's, or --model's) */
const char *load_policy_dir(const TrainOptions *o);
/* The adapter the options ask for (a new one's shape, or --adapter's): 1 and *s, or 0 */
int load_lora_spec(const TrainOptions *o, LoraSpec *s);
/* A judge's model, frozen, in --precision: a reward model (reward != 0,
 * --reward-index checked against its outputs) or a causal LM. */
Model *load_judge_model(const TrainOptions *o, const char *dir, int reward);
/* Dies (exit 2) unless m is a reward model (reward != 0) or a causal LM. */
void load_need_head(const Model *m, const char *dir, int reward, const char *who);
/* "fp32 products: <gemm_backend()>" or "bf16 products: <oneDNN line>; ..." */
const char *load_kernels(const Model *m);

/* A frozen model of a command resolved to the GPU (setup_device) gets the GPU's forward engine: its weights
 * uploaded once, model_forward_rows runs there; elsewhere nothing. Dies naming why (out of GPU memory: the sizes). */
void load_on_device(const TrainOptions *o, Model *m);

#endif
