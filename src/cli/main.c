/* main.c: the ppa binary: dispatch to subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/common.h"

#define PPA_VERSION "0.1.0"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
} COMMANDS[] = {
    {"loss", cmd_loss, "loss, gradient and ranking metrics of score lists (JSON Lines in and out)"},
    {"tokenize", cmd_tokenize, "text to token ids and back with a tokenizer.json"},
    {"init", cmd_init, "a randomly initialised Hugging Face model folder for a config.json"},
    {"inspect", cmd_inspect, "architecture, parameters, tensors and tokenizer of a model folder"},
    {"merge", cmd_merge, "a LoRA adapter folded into its base model: a Hugging Face folder"},
    {"logprobs", cmd_logprobs, "summed log-probabilities of each response of each row"},
    {"grad", cmd_grad, "the gradient of an objective on implicit rewards, as safetensors"},
    {"sft", cmd_sft, "supervised next-token training (AdamW), writes a model folder"},
    {"train", cmd_train, "listwise preference alignment (PPA or any baseline objective), writes a model folder"},
    {"reward", cmd_reward, "trains a reward model on scored lists (Bradley-Terry or any objective), writes its folder"},
    {"score", cmd_score, "reference log-probs of a data set, computed once into a cache file"},
    {"eval", cmd_eval, "ranking accuracy, NDCG and rank flips of a policy against its reference"},
    {"generate", cmd_generate, "K responses per prompt (greedy or sampled), as JSON Lines ready to be scored"},
    {"judge", cmd_judge, "scores of the responses of JSON Lines rows: a reward model, or AFINN-165 / VADER"},
    {"winrate", cmd_winrate, "win rate of one file's responses against another's on the same prompts, by a judge"},
    {"bench", cmd_bench, "benchmarks: 'ppa bench loss'"},
    {"demo", cmd_demo, "the paper's worked examples, computed by the library"},
};

static void usage(FILE *f) {
    fprintf(f, "ppa %s: listwise preference alignment (Permutative Preference Alignment)\n\n"
               "usage: ppa <command> [options]     ppa <command> --help\n\ncommands:\n",
            PPA_VERSION);
    for (size_t i = 0; i < PPA_ARRAY_LEN(COMMANDS); i++) fprintf(f, "  %-8s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(f, "  %-8s %s\n", "help", "this text");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("ppa %s\n", PPA_VERSION);
        return 0;
    }
    for (size_t i = 0; i < PPA_ARRAY_LEN(COMMANDS); i++)
        if (!strcmp(argv[1], COMMANDS[i].name)) return COMMANDS[i].run(argc - 1, argv + 1);
    fprintf(stderr, "ppa: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
