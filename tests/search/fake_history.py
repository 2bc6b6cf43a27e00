"""A tuning history on the fake backend, for the tests of the models trained on one
(:mod:`autoconv.search.ranker`, :mod:`autoconv.search.prefilter`)."""

from __future__ import annotations

from autoconv.backends.fake import FakeBackend
from autoconv.config.budget import Budget
from autoconv.problems.models import NamedProblem
from autoconv.problems.problem import parse_spec
from autoconv.search.options import SearchOptions, SearchSettings
from autoconv.search.tuner import Tuner

FAMILIES = ("direct", "im2col_gemm")
#: The problems tuned into the history.
TRAINED = (parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1"),
           parse_spec("N=1,C=32,H=20,W=20,K=24,R=3,S=3,pad=1"))
#: A problem not in it.
UNTUNED = parse_spec("N=4,C=24,H=17,W=23,K=40,R=3,S=3,pad=1")


def tune_history(journal: str):
    """Tune TRAINED into the journal file ``journal`` (60 fake-timed trials each); its storage."""
    full_studies = SearchSettings(FAMILIES, Budget(trials=60), seed=3, search=SearchOptions(transfer=False))
    tuner = Tuner(FakeBackend(), full_studies, storage=journal)
    for index, problem in enumerate(TRAINED):
        tuner.tune_problem(NamedProblem(f"trained{index}", problem))
    return tuner.storage
