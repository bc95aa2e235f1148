/* main.c: the ppa binary: dispatch to subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/common.h"
#include "core/text.h"
#include "dist/dist.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
    int ranks; /* 1: divides its work among the ranks of an MPI job (src/dist) */
} COMMANDS[] = {
    {"loss", cmd_loss, "loss, gradient and ranking metrics of score lists (JSON Lines in and out)", 0},
    {"tokenize", cmd_tokenize, "text to token ids and back with a tokenizer.json", 0},
    {"init", cmd_init, "a randomly initialised Hugging Face model folder for a config.json", 0},
    {"inspect", cmd_inspect, "architecture, parameters, tensors and tokenizer of a model folder", 0},
    {"merge", cmd_merge, "a LoRA adapter folded into its base model: a Hugging Face folder", 0},
    {"logprobs", cmd_logprobs, "summed log-probabilities of each response of each row", 1},
    {"grad", cmd_grad, "the gradient of an objective on implicit rewards, as safetensors", 0},
    {"sft", cmd_sft, "supervised next-token training (AdamW), writes a model folder", 1},
    {"train", cmd_train, "listwise preference alignment (PPA or any baseline objective), writes a model folder", 1},
    {"reward", cmd_reward, "trains a reward model on scored lists (Bradley-Terry or any objective), writes its folder", 1},
    {"score", cmd_score, "reference log-probs of a data set, computed once into a cache file", 1},
    {"eval", cmd_eval, "ranking accuracy, NDCG and rank flips of a policy against its reference", 1},
    {"generate", cmd_generate, "K responses per prompt (greedy or sampled), as JSON Lines ready to be scored", 1},
    {"judge", cmd_judge, "scores of the responses of JSON Lines rows: a reward model, or AFINN-165 / VADER", 1},
    {"winrate", cmd_winrate, "win rate of one file's responses against another's on the same prompts, by a judge", 0},
    {"bench", cmd_bench, "benchmarks: 'ppa bench loss'", 0},
    {"demo", cmd_demo, "the paper's worked examples, computed by the library", 0},
};

static void usage(FILE *f) {
    /* the grammar and the exit statuses before the list: the list ends the text (tests/test_readme.sh reads it) */
    fprintf(f, "ppa %s: listwise preference alignment (Permutative Preference Alignment)\n\n"
               "usage: ppa <command> [options]     ppa <command> --help\n"
               "options are long: --opt value or --opt=value, or an unambiguous prefix (--epoch for --epochs)\n"
               "exit status: 0 done; 2 a usage or input error (a bad option or value, a bad or missing input file or\n"
               "folder, a refused configuration); 1 a runtime failure (writing the output, out of memory, the GPU,\n"
               "an MPI collective); 70 an internal error (a bug). docs/cli.md has the details.\n\ncommands:\n",
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
    char err[512];
    if (dist_init(err, sizeof err)) ppa_die(2, "%s", err);
    for (size_t i = 0; i < PPA_ARRAY_LEN(COMMANDS); i++) {
        if (strcmp(argv[1], COMMANDS[i].name)) continue;
        if (dist_size() > 1 && !COMMANDS[i].ranks) /* each rank would write the same output */
            ppa_die(2, "%s runs in one process; several ranks (mpirun -np %d) divide train, sft, reward, score, "
                       "logprobs, eval, generate and judge", argv[1], dist_size());
        return COMMANDS[i].run(argc - 1, argv + 1);
    }
    TextClosest near = {0};
    for (size_t i = 0; i < PPA_ARRAY_LEN(COMMANDS); i++) text_closest_add(&near, argv[1], COMMANDS[i].name);
    if (near.best) ppa_die(2, "unknown command '%s' (did you mean '%s'? 'ppa help' lists the commands)", argv[1], near.best);
    fprintf(stderr, "ppa: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
