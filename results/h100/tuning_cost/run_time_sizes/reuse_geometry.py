"""Compile CPU that implicit_gemm_wgmma's run-time-size build would save, from the H100 journals of
../config_reuse: a candidate of implicit_gemm_wgmma whose source in that build (as the working tree
renders it: the configuration, OUT_VEC, precision, bias, the filter size) was compiled earlier in the
run, or by the ResNet-50 history.

    python results/h100/tuning_cost/run_time_sizes/reuse_geometry.py

(With the spatial sizes compiled in as well, the variant measured in speed_spatial_compiled/, the
same count gave 11% for ResNet-50, 10-13% for VGG-16 and nothing from the history.)"""
import sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent.parent / "config_reuse"))
import optuna
from reuse import HISTORY, JOURNALS, evaluated, problem_specs
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec
from autoconv.search.study import config_of

def key(spec, params):
    family = params["family"]
    if family != "implicit_gemm_wgmma":
        return None
    config = config_of(params, family)
    p = parse_spec(spec)
    return get_family(family).plan(p, config, H100, run_time_sizes=True).source_hash

def run(journal, seen=None):
    specs = problem_specs(journal)
    rows = evaluated(journal)
    own = set(); total = 0.0; wg = 0.0; saved_own = 0.0; saved_hist = 0.0; keys = set()
    for start, study, params, cpu, family in rows:
        total += cpu
        k = key(specs[study], dict(params))
        if k is None:
            continue
        wg += cpu
        keys.add(k)
        if k in own:
            saved_own += cpu
        elif seen is not None and k in seen:
            saved_hist += cpu
        own.add(k)
    return total, wg, saved_own, saved_hist, keys, len(rows)

optuna.logging.set_verbosity(optuna.logging.WARNING)
t, wg, so, sh, hist_keys, n = run(HISTORY)
print(f"ResNet-50 (history journal): {n} evaluated, compile {t:.1f} CPU-s, wgmma {wg:.1f}; repeats own source {so:.1f} CPU-s ({so/t:.0%} of all)")
for name in ("vgg_new1", "vgg_new2", "vgg_old1", "vgg_old2"):
    t, wg, so, sh, _, n = run(JOURNALS / f"journal_{name}.gz", hist_keys)
    print(f"{name}: {n} evaluated, compile {t:.1f} CPU-s, wgmma {wg:.1f}; own repeats {so:.1f} ({so/t:.0%}), in RN50 history {sh:.1f} ({sh/t:.0%}), either {(so+sh)/t:.0%}")
