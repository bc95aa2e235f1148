/* attention_plan.cu: the fused attention's plan (attention.h): built on the host by attn_sched.c (plain C, shared with
 * the module's CPU stand-in) once per batch, uploaded in one allocation (the design: the top of attention.cu and
 * attn_sched.h). */
#include "cuda/attention_internal.cuh"

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

extern "C" PcAttnPlan *pc_attn_plan_new(const int *pstart, const int *plen, const int *sstart, int T, int window) {
    char why[200];
    AttnSched s;
    if (attn_sched_build(&s, pstart, plen, sstart, T, window, why, sizeof why)) {
        pc_fail(__FILE__, __LINE__, "pc_attn_plan_new", why);
        return NULL;
    }
    /* the tables, in this order, in one device allocation */
    const void *src[] = {s.mask, s.off64, s.off128, s.iv64, s.iv128, s.qord64, s.qord128, s.koff, s.klist, s.items,
                         s.kioff, s.kitems};
    const size_t len[] = {sizeof(int4) * T, sizeof(int) * (s.nq64 + 1), sizeof(int) * (s.nq128 + 1),
                          sizeof(int2) * s.niv64, sizeof(int2) * s.niv128, sizeof(int) * s.nq64,
                          sizeof(int) * s.nq128, sizeof(int) * (s.nk64 + 1), sizeof(int) * s.koff[s.nk64],
                          sizeof(int) * 3 * s.nitems, sizeof(int) * (s.nk64 + 1), sizeof(int) * s.nitems};
    enum { NTAB = sizeof len / sizeof len[0] };
    size_t off[NTAB], total = 0;
    for (int i = 0; i < NTAB; i++) off[i] = total, total += align16(len[i] ? len[i] : 1);
    unsigned char *host = (unsigned char *)calloc(1, total);
    PcAttnPlan *p = (PcAttnPlan *)calloc(1, sizeof *p);
    void *dev = host && p ? pc_alloc(total) : NULL;
    if (!dev) {
        if (!host || !p) pc_fail(__FILE__, __LINE__, "pc_attn_plan_new", "out of host memory");
        free(host), free(p), attn_sched_free(&s);
        return NULL;
    }
    for (int i = 0; i < NTAB; i++)
        if (len[i]) memcpy(host + off[i], src[i], len[i]);
    int rc = pc_upload(dev, host, total) || pc_sync();
    free(host);
    if (rc) {
        pc_free(dev), free(p), attn_sched_free(&s);
        return NULL;
    }
    unsigned char *d = (unsigned char *)dev;
    p->T = T, p->window = window, p->nq64 = s.nq64, p->nq128 = s.nq128, p->nk64 = s.nk64, p->pairs = s.pairs;
    p->nitems = s.nitems;
    p->mask = (int4 *)(d + off[0]);
    p->off64 = (int *)(d + off[1]), p->off128 = (int *)(d + off[2]);
    p->iv64 = (int2 *)(d + off[3]), p->iv128 = (int2 *)(d + off[4]);
    p->qord64 = (int *)(d + off[5]), p->qord128 = (int *)(d + off[6]);
    p->koff = (int *)(d + off[7]), p->klist = (int *)(d + off[8]);
    p->items = (int *)(d + off[9]), p->kioff = (int *)(d + off[10]), p->kitems = (int *)(d + off[11]);
    p->dev = dev;
    attn_sched_free(&s);
    return p;
}

extern "C" void pc_attn_plan_free(PcAttnPlan *p) {
    if (!p) return;
    pc_free(p->dev);
    free(p);
}

extern "C" int pc_attn_plan_tokens(const PcAttnPlan *p) { return p->T; }
extern "C" long long pc_attn_plan_pairs(const PcAttnPlan *p) { return p->pairs; }
