"""The ResNet-50 history's model on VGG-16's layers: each family's predicted best over the fastest
family's (H100 limits, every family of fp32).   python3 family_margins.py RN50_JOURNAL.gz"""
import gzip
import shutil
import sys
import tempfile

from autoconv.kernels.families import FAMILY_NAMES
from autoconv.kernels.limits import H100
from autoconv.problems.models import vgg16
from autoconv.search.points import ValidPoints, enumerate_points
from autoconv.search.ranker import Ranker, history_samples
from autoconv.search.storage import make_storage

with tempfile.NamedTemporaryFile(suffix=".journal", delete=False) as out, gzip.open(sys.argv[1]) as src:
    shutil.copyfileobj(src, out)
ranker = Ranker(history_samples(make_storage(out.name), H100.name, "fp32"))
for item in vgg16(8):
    points = ValidPoints(enumerate_points(item.problem, FAMILY_NAMES, H100, 1 << 30))
    best = {family: float(min(ranker.predict_ms(item.problem, family, configs)))
            for family, configs in points.points.items() if family in ranker.families}
    fastest = min(best.values())
    print(f"{item.name:20s}", "  ".join(f"{family} {ms / fastest:.2f}" for family, ms in sorted(best.items(), key=lambda kv: kv[1])))
