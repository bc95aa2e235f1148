/* attention_plan.cu: the fused attention's plan (attention.h): each token's key ranges, every query block's
 * merged key intervals and every key block's query blocks, built on the host once per batch (the design: the top
 * of attention.cu). */
#include <algorithm>
#include <vector>

#include "cuda/attention_internal.cuh"

/* merged key intervals of each block of B queries: off [n + 1], iv */
static void block_intervals(int B, const std::vector<int4> &m, int T, std::vector<int> &off, std::vector<int2> &iv) {
    std::vector<int2> tmp;
    off.assign(1, 0);
    for (int t0 = 0; t0 < T; t0 += B) {
        tmp.clear();
        for (int t = t0; t < T && t < t0 + B; t++) {
            if (m[t].x < m[t].y) tmp.push_back(make_int2(m[t].x, m[t].y));
            tmp.push_back(make_int2(m[t].z, t + 1));
        }
        std::sort(tmp.begin(), tmp.end(), [](int2 a, int2 b) { return a.x < b.x || (a.x == b.x && a.y < b.y); });
        int2 cur = tmp[0];
        for (size_t i = 1; i < tmp.size(); i++) {
            if (tmp[i].x <= cur.y) /* overlapping or adjacent: one interval */
                cur.y = std::max(cur.y, tmp[i].y);
            else
                iv.push_back(cur), cur = tmp[i];
        }
        iv.push_back(cur);
        off.push_back((int)iv.size());
    }
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* the plan's tables on the host; 0, or -1 with why */
struct PlanHost {
    std::vector<int4> m;
    long long pairs;
    std::vector<int> off64, off128, koff, klist;
    std::vector<int2> iv64, iv128;
};

static int plan_host(PlanHost &h, const int *pstart, const int *plen, const int *sstart, int T, int window, char *why,
                     size_t whylen) {
    if (T < 1 || window < 0) {
        snprintf(why, whylen, "T = %d, window = %d (T >= 1, window >= 0)", T, window);
        return -1;
    }
    h.m.assign((size_t)T, make_int4(0, 0, 0, 0));
    h.pairs = 0;
    for (int t = 0; t < T; t++) {
        long ps = pstart[t], pl = plen[t], ss = sstart[t];
        if (ps < 0 || pl < 0 || ps + pl > T || ss < 0 || ss > t) {
            snprintf(why, whylen, "token %d: pstart %ld, plen %ld, sstart %ld (0 <= pstart, pstart + plen <= %d, "
                     "0 <= sstart <= t)", t, ps, pl, ss, T);
            return -1;
        }
        long pa = ps, pb = ps + pl, sa = ss;
        if (window > 0) {
            long qpos = pl + (t - ss); /* t's position in its sequence; key j of the prompt is at j - ps */
            pa = std::max(pa, ps + qpos - window + 1);
            if (pa > pb) pa = pb;
            sa = std::max(sa, (long)t - window + 1);
        }
        h.m[t] = make_int4((int)pa, (int)pb, (int)sa, 0);
        long over = std::min(pb, (long)t + 1) - std::max(pa, sa); /* keys in both ranges count once */
        h.pairs += (pb - pa) + (t + 1 - sa) - (over > 0 ? over : 0);
    }
    block_intervals(QB, h.m, T, h.off64, h.iv64);
    block_intervals(128, h.m, T, h.off128, h.iv128);
    const int nq64 = (T + QB - 1) / QB, nk64 = (T + KB - 1) / KB;
    std::vector<int> last((size_t)nk64, -1);
    h.koff.assign((size_t)nk64 + 1, 0);
    for (int pass = 0; pass < 2; pass++) { /* counts, then the lists (query blocks in increasing order) */
        std::fill(last.begin(), last.end(), -1);
        std::vector<int> fill(h.koff.begin(), h.koff.end() - 1);
        if (pass) h.klist.assign((size_t)h.koff[nk64], 0);
        for (int qi = 0; qi < nq64; qi++)
            for (int i = h.off64[qi]; i < h.off64[qi + 1]; i++)
                for (int kt = h.iv64[i].x / KB; kt <= (h.iv64[i].y - 1) / KB; kt++) {
                    if (last[kt] == qi) continue; /* two intervals of a block in one key block */
                    last[kt] = qi;
                    if (pass)
                        h.klist[fill[kt]++] = qi;
                    else
                        h.koff[kt + 1]++;
                }
        if (!pass)
            for (int kt = 0; kt < nk64; kt++) h.koff[kt + 1] += h.koff[kt];
    }
    return 0;
}

extern "C" PcAttnPlan *pc_attn_plan_new(const int *pstart, const int *plen, const int *sstart, int T, int window) {
    char why[200];
    PlanHost ph;
    if (plan_host(ph, pstart, plen, sstart, T, window, why, sizeof why)) {
        pc_fail(__FILE__, __LINE__, "pc_attn_plan_new", why);
        return NULL;
    }
    const std::vector<int4> &m = ph.m;
    const std::vector<int> &off64 = ph.off64, &off128 = ph.off128, &koff = ph.koff, &klist = ph.klist;
    const std::vector<int2> &iv64 = ph.iv64, &iv128 = ph.iv128;
    const int nq64 = (T + QB - 1) / QB, nk64 = (T + KB - 1) / KB;
    const long long pairs = ph.pairs;
    size_t o_mask = 0, o_off64 = align16(sizeof(int4) * T), o_off128 = o_off64 + align16(sizeof(int) * off64.size());
    size_t o_iv64 = o_off128 + align16(sizeof(int) * off128.size()), o_iv128 = o_iv64 + align16(sizeof(int2) * iv64.size());
    size_t o_koff = o_iv128 + align16(sizeof(int2) * iv128.size()), o_klist = o_koff + align16(sizeof(int) * koff.size());
    size_t total = o_klist + align16(sizeof(int) * (klist.size() ? klist.size() : 1));
    std::vector<unsigned char> host(total, 0);
    memcpy(host.data() + o_mask, m.data(), sizeof(int4) * T);
    memcpy(host.data() + o_off64, off64.data(), sizeof(int) * off64.size());
    memcpy(host.data() + o_off128, off128.data(), sizeof(int) * off128.size());
    memcpy(host.data() + o_iv64, iv64.data(), sizeof(int2) * iv64.size());
    memcpy(host.data() + o_iv128, iv128.data(), sizeof(int2) * iv128.size());
    memcpy(host.data() + o_koff, koff.data(), sizeof(int) * koff.size());
    if (klist.size()) memcpy(host.data() + o_klist, klist.data(), sizeof(int) * klist.size());
    void *dev = pc_alloc(total);
    if (!dev) return NULL;
    if (pc_upload(dev, host.data(), total) || pc_sync()) {
        pc_free(dev);
        return NULL;
    }
    PcAttnPlan *p = (PcAttnPlan *)calloc(1, sizeof *p);
    if (!p) {
        pc_free(dev);
        pc_fail(__FILE__, __LINE__, "pc_attn_plan_new", "out of host memory");
        return NULL;
    }
    unsigned char *d = (unsigned char *)dev;
    p->T = T, p->window = window, p->nq64 = nq64, p->nq128 = (T + 127) / 128, p->nk64 = nk64, p->pairs = pairs;
    p->mask = (int4 *)(d + o_mask);
    p->off64 = (int *)(d + o_off64), p->off128 = (int *)(d + o_off128);
    p->iv64 = (int2 *)(d + o_iv64), p->iv128 = (int2 *)(d + o_iv128);
    p->koff = (int *)(d + o_koff), p->klist = (int *)(d + o_klist);
    p->dev = dev;
    return p;
}

extern "C" void pc_attn_plan_free(PcAttnPlan *p) {
    if (!p) return;
    pc_free(p->dev);
    free(p);
}

extern "C" int pc_attn_plan_tokens(const PcAttnPlan *p) { return p->T; }
extern "C" long long pc_attn_plan_pairs(const PcAttnPlan *p) { return p->pairs; }
