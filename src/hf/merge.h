/* merge.h: a LoRA adapter folded into its base (`ppa merge`). */
#ifndef PPA_MERGE_H
#define PPA_MERGE_H

#include <stddef.h>

#include "io/safetensors.h"

/* Writes folder out: the base model folder with every target matrix
 * replaced by W + s B A of the adapter folder (lora_merge_into), the other
 * tensors as they are, in dtype, with the base's config.json and tokenizer
 * files. 0 or -1 with err. */
int adapter_merge_folder(const char *base, const char *adapter, const char *out, StDtype dtype, char *err,
                         size_t errlen);

#endif
