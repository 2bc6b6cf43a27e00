import json, math, sys
def seqs(path):
    d = json.load(open(path)); out = {}
    for name, rows in d.items():
        rows = sorted(rows, key=lambda r: r['n'])
        ev = [r for r in rows if r['status'] not in ('invalid', 'repeat')]
        out[name.split('/')[1]] = [(r['value'] if r['state'] == 'COMPLETE' and r['value'] else math.inf, r['origin'] or '') for r in ev]
    return out
def sim(seq, P, Ph, theta=0.02):
    best = math.inf; anchor = math.inf; since = 0; anchor_origin = ''
    for i, (v, o) in enumerate(seq):
        best = min(best, v)
        if v < anchor * (1 - theta): anchor = v; since = 0; anchor_origin = o
        else: since += 1
        p = Ph if anchor_origin.startswith('winner of') else P
        if since >= p: return i + 1, best
    return len(seq), best
for path in sys.argv[1:]:
    S = seqs(path); finals = {k: min(v for v, _ in s) for k, s in S.items()}
    hist = [k for k, s in S.items() if any(o.startswith('winner of') for _, o in s)]
    print(path, len(S), "studies,", len(hist), "with transferred winners")
    base_n = sum(sim(S[k], 40, 40)[0] for k in hist)
    for Ph in (40, 30, 20, 15, 10):
        n = 0; logs = []; worst = 1; wk = ''
        for k in hist:
            used, best = sim(S[k], 40, Ph); n += used
            r = best / finals[k]; logs.append(math.log(r))
            if r > worst: worst, wk = r, k
        print(f"  hist patience {Ph}: trials {n} ({n/base_n:.2f} of P40)  best/final geomean {math.exp(sum(logs)/len(logs)):.4f} worst {worst:.3f} {wk[:40]}")
    # where did the final best come from
    import collections
    c = collections.Counter()
    for k in hist:
        s = S[k]; i = min(range(len(s)), key=lambda j: s[j][0]); c[s[i][1].split(' (')[0][:30]] += 1
    print("  final best's origin:", dict(c))
