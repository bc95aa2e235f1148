/* bench_files.c: AlpacaEval's and MT-Bench's answer files (bench_files.h). */
#include "eval/bench_files.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/common.h"
#include "core/hash.h"
#include "io/jsonl.h"
#include "template/jinja.h"

double mtbench_temperature(const char *category) {
    static const struct {
        const char *name;
        double t;
    } T[] = {{"writing", 0.7}, {"roleplay", 0.7}, {"extraction", 0.0}, {"math", 0.0},         {"coding", 0.0},
             {"reasoning", 0.0}, {"stem", 0.1},   {"humanities", 0.1}, {"arena-hard-200", 0.0}};
    for (size_t i = 0; category && i < sizeof T / sizeof T[0]; i++)
        if (!strcmp(category, T[i].name)) return T[i].t;
    return 0.7;
}

void mtbench_answer_id(char *out, uint64_t seed, const char *model_id, long line, const char *question_id) {
    static const char ALPHABET[] = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"; /* shortuuid's 57 */
    uint64_t h = hash64(&seed, sizeof seed, 0x616e737765726964ULL);
    h = hash64_more(h, model_id, strlen(model_id) + 1);
    h = hash64_more(h, &line, sizeof line);
    h = hash64_more(h, question_id, strlen(question_id) + 1);
    unsigned __int128 v = ((unsigned __int128)h << 64) | hash64(&h, sizeof h, 0x9e3779b97f4a7c15ULL);
    for (int i = 0; i < 22; i++) out[i] = ALPHABET[(int)(v % 57)], v /= 57;
    out[22] = 0;
}

int bench_tstamp(double *t, char *err, size_t errlen) {
    const char *e = getenv("SOURCE_DATE_EPOCH");
    if (e && *e) { /* the variable's rules are the chat templates' (strftime_now) */
        long long v;
        if (jinja_source_date(&v, err, errlen)) return -1;
        *t = (double)v;
        return 0;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *t = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
    return 0;
}

void mtbench_write_answer(FILE *f, const cJSON *question_id, const char *answer_id, const char *model_id,
                          char *const *text, const size_t *len, int n_choices, int n_turns, double tstamp) {
    char *qid = cJSON_PrintUnformatted(question_id);
    if (!qid) ppa_die(1, "generate: out of memory");
    /* json.dumps' separators, so that the line reads as FastChat's own */
    fprintf(f, "{\"question_id\": %s, \"answer_id\": \"%s\", \"model_id\": ", qid, answer_id);
    free(qid);
    json_put_string(f, model_id, strlen(model_id));
    fputs(", \"choices\": [", f);
    for (int j = 0; j < n_choices; j++) {
        fprintf(f, "%s{\"index\": %d, \"turns\": [", j ? ", " : "", j);
        for (int t = 0; t < n_turns; t++) {
            size_t k = (size_t)j * n_turns + t;
            fputs(t ? ", " : "", f), json_put_string(f, text[k], len[k]);
        }
        fputs("]}", f);
    }
    fprintf(f, "], \"tstamp\": %.6f}\n", tstamp);
}

void alpaca_write_element(FILE *f, const cJSON *source, const char *output, size_t len, const char *generator, long i,
                          long n) {
    if (n == 0) {
        fputs("[]\n", f);
        return;
    }
    fputs(i == 0 ? "[\n  " : ",\n  ", f);
    /* the input's fields in their order, output and generator set where they are (AlpacaEval's own file carries
     * the reference's) or added at the end */
    fputc('{', f);
    int has_output = 0, has_generator = 0, k = 0;
    for (const cJSON *it = source->child; it; it = it->next, k++) {
        fputs(k ? ", " : "", f);
        json_put_string(f, it->string, strlen(it->string));
        fputs(": ", f);
        if (!strcmp(it->string, "output")) has_output = 1, json_put_string(f, output, len);
        else if (!strcmp(it->string, "generator")) has_generator = 1, json_put_string(f, generator, strlen(generator));
        else {
            char *v = cJSON_PrintUnformatted(it);
            if (!v) ppa_die(1, "generate: out of memory");
            fputs(v, f);
            free(v);
        }
    }
    if (!has_output) fputs(k++ ? ", \"output\": " : "\"output\": ", f), json_put_string(f, output, len);
    if (!has_generator) fputs(k++ ? ", \"generator\": " : "\"generator\": ", f), json_put_string(f, generator, strlen(generator));
    fputc('}', f);
    if (i == n - 1) fputs("\n]\n", f);
}
