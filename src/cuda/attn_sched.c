/* attn_sched.c: the fused attention's plan on the host (attn_sched.h). */
#include "cuda/attn_sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_iv(const void *a, const void *b) {
    const int *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* the merged key intervals of each block of B queries into *off [n + 1], *iv [*niv][2]; 0 or -1 (no memory) */
static int block_intervals(int B, const int *m, int T, int **off, int **iv, int *niv) {
    int n = (T + B - 1) / B, cap = 2 * T, cnt = 0, tmp[2 * 2 * ATTN_QB2];
    *off = malloc(sizeof(int) * (size_t)(n + 1));
    *iv = malloc(sizeof(int) * 2 * (size_t)cap);
    if (!*off || !*iv) return -1;
    (*off)[0] = 0;
    for (int b = 0; b < n; b++) {
        int nt = 0;
        for (int t = b * B; t < T && t < (b + 1) * B; t++) {
            if (m[4 * t] < m[4 * t + 1]) tmp[2 * nt] = m[4 * t], tmp[2 * nt + 1] = m[4 * t + 1], nt++;
            tmp[2 * nt] = m[4 * t + 2], tmp[2 * nt + 1] = t + 1, nt++;
        }
        qsort(tmp, (size_t)nt, 2 * sizeof(int), cmp_iv);
        int cx = tmp[0], cy = tmp[1];
        for (int i = 1; i < nt; i++) {
            if (tmp[2 * i] <= cy) { /* overlapping or adjacent: one interval */
                if (tmp[2 * i + 1] > cy) cy = tmp[2 * i + 1];
            } else {
                (*iv)[2 * cnt] = cx, (*iv)[2 * cnt + 1] = cy, cnt++;
                cx = tmp[2 * i], cy = tmp[2 * i + 1];
            }
        }
        (*iv)[2 * cnt] = cx, (*iv)[2 * cnt + 1] = cy, cnt++;
        (*off)[b + 1] = cnt;
    }
    *niv = cnt;
    return 0;
}

/* the blocks 0 .. n-1 by weight w[], heaviest first, ties the lower block first */
typedef struct {
    long long w;
    int i;
} Weighted;
static int cmp_heavy(const void *a, const void *b) {
    const Weighted *x = a, *y = b;
    if (x->w != y->w) return x->w < y->w ? 1 : -1;
    return (x->i > y->i) - (x->i < y->i);
}
static int order_by_weight(int n, const long long *w, int **ord) {
    Weighted *t = malloc(sizeof *t * (size_t)(n > 0 ? n : 1));
    if (!t || !(*ord = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1)))) return free(t), -1;
    for (int i = 0; i < n; i++) t[i].w = w[i], t[i].i = i;
    qsort(t, (size_t)n, sizeof *t, cmp_heavy);
    for (int i = 0; i < n; i++) (*ord)[i] = t[i].i;
    free(t);
    return 0;
}

/* the order of query blocks by the keys their intervals cover */
static int query_order(int n, const int *off, const int *iv, int **ord) {
    long long *w = malloc(sizeof(long long) * (size_t)(n > 0 ? n : 1));
    if (!w) return -1;
    for (int b = 0; b < n; b++) {
        w[b] = 0;
        for (int i = off[b]; i < off[b + 1]; i++) w[b] += iv[2 * i + 1] - iv[2 * i];
    }
    int rc = order_by_weight(n, w, ord);
    free(w);
    return rc;
}

/* the key blocks' lists of query blocks (the transpose of the 64-query blocks' intervals) */
static int key_lists(AttnSched *s) {
    int nk = s->nk64, *last = malloc(sizeof(int) * (size_t)nk), *fill = NULL;
    if (!last || !(s->koff = calloc((size_t)nk + 1, sizeof(int)))) return free(last), -1;
    for (int pass = 0; pass < 2; pass++) { /* counts, then the lists (query blocks ascending) */
        for (int k = 0; k < nk; k++) last[k] = -1;
        if (pass && (!(s->klist = malloc(sizeof(int) * (size_t)(s->koff[nk] > 0 ? s->koff[nk] : 1))) ||
                     !(fill = malloc(sizeof(int) * (size_t)nk))))
            return free(last), free(fill), -1;
        if (pass) memcpy(fill, s->koff, sizeof(int) * (size_t)nk);
        for (int qb = 0; qb < s->nq64; qb++)
            for (int i = s->off64[qb]; i < s->off64[qb + 1]; i++)
                for (int kt = s->iv64[2 * i] / ATTN_KB; kt <= (s->iv64[2 * i + 1] - 1) / ATTN_KB; kt++) {
                    if (last[kt] == qb) continue; /* two intervals of a block in one key block */
                    last[kt] = qb;
                    if (pass)
                        s->klist[fill[kt]++] = qb;
                    else
                        s->koff[kt + 1]++;
                }
        if (!pass)
            for (int k = 0; k < nk; k++) s->koff[k + 1] += s->koff[k];
    }
    free(last), free(fill);
    return 0;
}

/* the dk/dv items: each list cut into ceil(n / chunk) near-equal runs, ordered by their length, longest first */
static int dkv_items(AttnSched *s) {
    int nk = s->nk64, w = s->koff[nk], n = 0;
    s->chunk = (w + ATTN_EXTRA_ITEMS - 1) / ATTN_EXTRA_ITEMS;
    if (s->chunk < 4) s->chunk = 4;
    for (int k = 0; k < nk; k++) {
        int len = s->koff[k + 1] - s->koff[k];
        n += len ? (len + s->chunk - 1) / s->chunk : 1; /* a key block no query sees still gets its zeros */
    }
    int *raw = malloc(sizeof(int) * 3 * (size_t)n), *ord = NULL;
    long long *wt = malloc(sizeof(long long) * (size_t)n);
    s->items = malloc(sizeof(int) * 3 * (size_t)n);
    s->kioff = malloc(sizeof(int) * ((size_t)nk + 1));
    s->kitems = malloc(sizeof(int) * (size_t)n);
    int *rank = malloc(sizeof(int) * (size_t)n);
    if (!raw || !wt || !s->items || !s->kioff || !s->kitems || !rank) goto fail;
    int i = 0;
    for (int k = 0; k < nk; k++) {
        int a = s->koff[k], len = s->koff[k + 1] - a, c = len ? (len + s->chunk - 1) / s->chunk : 1;
        s->kioff[k] = i;
        for (int j = 0; j < c; j++) { /* run j of c: [a + len j / c, a + len (j + 1) / c) */
            int x = a + (int)((long long)len * j / c), y = a + (int)((long long)len * (j + 1) / c);
            raw[3 * i] = k, raw[3 * i + 1] = x, raw[3 * i + 2] = y - x, wt[i] = y - x, i++;
        }
    }
    s->kioff[nk] = n;
    if (order_by_weight(n, wt, &ord)) goto fail;
    for (int r = 0; r < n; r++) {
        memcpy(s->items + 3 * r, raw + 3 * ord[r], 3 * sizeof(int));
        rank[ord[r]] = r;
    }
    for (int j = 0; j < n; j++) s->kitems[j] = rank[j]; /* raw order is each key block's list order */
    s->nitems = n;
    free(raw), free(wt), free(ord), free(rank);
    return 0;
fail:
    free(raw), free(wt), free(ord), free(rank);
    return -1;
}

int attn_sched_build(AttnSched *s, const int *pstart, const int *plen, const int *sstart, int T, int window,
                     char *why, size_t whylen) {
    memset(s, 0, sizeof *s);
    if (T < 1 || window < 0) {
        snprintf(why, whylen, "T = %d, window = %d (T >= 1, window >= 0)", T, window);
        return -1;
    }
    s->T = T, s->window = window;
    s->nq64 = (T + ATTN_QB - 1) / ATTN_QB, s->nq128 = (T + ATTN_QB2 - 1) / ATTN_QB2;
    s->nk64 = (T + ATTN_KB - 1) / ATTN_KB;
    if (!(s->mask = malloc(sizeof(int) * 4 * (size_t)T))) goto nomem;
    for (int t = 0; t < T; t++) {
        long ps = pstart[t], pl = plen[t], ss = sstart[t];
        if (ps < 0 || pl < 0 || ps + pl > T || ss < 0 || ss > t) {
            snprintf(why, whylen, "token %d: pstart %ld, plen %ld, sstart %ld (0 <= pstart, pstart + plen <= %d, "
                     "0 <= sstart <= t)", t, ps, pl, ss, T);
            attn_sched_free(s);
            return -1;
        }
        long pa = ps, pb = ps + pl, sa = ss;
        if (window > 0) { /* t's position in its sequence: its prompt's length, then its place in the segment */
            long qpos = pl + (t - ss);
            if (pa < ps + qpos - window + 1) pa = ps + qpos - window + 1;
            if (pa > pb) pa = pb;
            if (sa < t - window + 1) sa = t - window + 1;
        }
        s->mask[4 * t] = (int)pa, s->mask[4 * t + 1] = (int)pb, s->mask[4 * t + 2] = (int)sa, s->mask[4 * t + 3] = 0;
        long lo = pa > sa ? pa : sa, hi = pb < t + 1 ? pb : t + 1; /* keys in both ranges count once */
        s->pairs += (pb - pa) + (t + 1 - sa) - (hi > lo ? hi - lo : 0);
    }
    if (block_intervals(ATTN_QB, s->mask, T, &s->off64, &s->iv64, &s->niv64) ||
        block_intervals(ATTN_QB2, s->mask, T, &s->off128, &s->iv128, &s->niv128) ||
        query_order(s->nq64, s->off64, s->iv64, &s->qord64) ||
        query_order(s->nq128, s->off128, s->iv128, &s->qord128) ||
        key_lists(s) || dkv_items(s))
        goto nomem;
    return 0;
nomem:
    snprintf(why, whylen, "out of host memory for the plan of %d tokens", T);
    attn_sched_free(s);
    return -1;
}

void attn_sched_free(AttnSched *s) {
    free(s->mask), free(s->off64), free(s->off128), free(s->iv64), free(s->iv128), free(s->qord64);
    free(s->qord128), free(s->koff), free(s->klist), free(s->items), free(s->kioff), free(s->kitems);
    memset(s, 0, sizeof *s);
}

size_t attn_work_d_floats(int T, int NH) {
    size_t n = (size_t)(T > 0 ? T : 1) * (size_t)(NH > 0 ? NH : 1);
    return (n + 63) & ~(size_t)63;
}

size_t attn_work_partial_floats(int T, int NH, int HS) {
    size_t nk = (size_t)((T > 0 ? T : 1) + ATTN_KB - 1) / ATTN_KB;
    return (nk + ATTN_EXTRA_ITEMS) * (size_t)(NH > 0 ? NH : 1) * ATTN_KB * (size_t)(HS > 0 ? HS : 1);
}

size_t attn_work_bytes(int T, int NH, int HS) {
    return sizeof(float) * (attn_work_d_floats(T, NH) + 2 * attn_work_partial_floats(T, NH, HS));
}
