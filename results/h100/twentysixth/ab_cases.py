"""The "old" side of ab_epilogue.py: each staged-epilogue winner of the TMA family in the given
results.json files, rendered with this tree's templates into OUT/NN.cu, listed in OUT/cases.json
(spec, configuration, source path). Run it before applying a template change, carry OUT to the
device with the change applied, then run ab_epilogue.py OUT/cases.json (call 3 did this for the
stores in batches, rendering from the template before them).
    python3 results/h100/twentysixth/ab_cases.py .probe/ab RESULTS.json [RESULTS.json ...]
"""
import json
import sys
from pathlib import Path

from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
family = get_family("implicit_gemm_wgmma_tma")
defaults = family.space.default
cases = []
for path in sys.argv[2:]:
    tag = Path(path).parent.name
    for problem in json.load(open(path))["problems"]:
        if problem["family"] != family.name:
            continue
        # results of older code lack the parameters added since: the default's
        config = {name: problem["params"].get(name, defaults[name]) for name in family.space.params}
        plan = family.plan(parse_spec(problem["spec"]), config, H100)
        if not plan.values["STAGED"]:
            continue
        source = out / f"{len(cases):02d}.cu"
        source.write_text(plan.source)
        cases.append({"label": f"{tag}.{problem['name']}", "spec": problem["spec"], "config": config,
                      "old_source": str(source)})
(out / "cases.json").write_text(json.dumps(cases, indent=1))
print(f"{len(cases)} cases in {out / 'cases.json'}")
