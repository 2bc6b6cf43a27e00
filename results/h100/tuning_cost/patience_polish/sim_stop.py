import json, math, sys
def seqs(path):
    d = json.load(open(path)); out = {}
    for name, rows in d.items():
        rows = sorted(rows, key=lambda r: r['n'])
        ev = [r for r in rows if r['status'] not in ('invalid', 'repeat')]
        out[name.split('/')[1]] = [(r['value'] if r['state'] == 'COMPLETE' else math.inf, r['origin'] or '') for r in ev]
    return out
def sim(seq, P, theta, first_min=0):
    best = math.inf; anchor = math.inf; since = 0
    for i, (v, _) in enumerate(seq):
        best = min(best, v)
        if v < anchor * (1 - theta): anchor = v; since = 0
        else: since += 1
        if since >= P and i + 1 >= first_min: return i + 1, best
    return len(seq), best
if __name__ == "__main__":
  for path in sys.argv[1:]:
      S = seqs(path); total = sum(len(s) for s in S.values())
      finals = {k: min(v for v, _ in s) for k, s in S.items()}
      print(path, "studies", len(S), "evaluated", total)
      for P in (60, 45, 40, 30, 20, 15):
          for theta in (0.0, 0.01, 0.02, 0.03):
              n = 0; logs = []; worst = 1
              for k, s in S.items():
                  used, best = sim(s, P, theta); n += used
                  r = best / finals[k]; logs.append(math.log(r)); worst = max(worst, r)
              print(f"  P={P:3d} theta={theta:.2f}: trials {n:5d} ({n/total:.2f})  best/final geomean {math.exp(sum(logs)/len(logs)):.4f} worst {worst:.3f}")
