/* commands.h: the subcommands of the ppa binary. Each takes the arguments
 * after its name (argv[0] = the command name) and returns the exit status. */
#ifndef PPA_CLI_COMMANDS_H
#define PPA_CLI_COMMANDS_H

#define PPA_VERSION "0.1.0" /* ppa --version, the model cards */

int cmd_loss(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* ppa bench generate (bench_generate.c), through cmd_bench; a bench flag's whole number >= lo, or death naming it */
int bench_generate(int argc, char **argv);
int bench_int_value(const char *who, const char *flag, const char *v, long lo);
int cmd_demo(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_logprobs(int argc, char **argv);
int cmd_grad(int argc, char **argv);
int cmd_sft(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_reward(int argc, char **argv);
int cmd_score(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_judge(int argc, char **argv);
int cmd_winrate(int argc, char **argv);
int cmd_generate(int argc, char **argv);

#endif
