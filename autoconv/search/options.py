"""The settings of a tuning run, each written and defaulted once.

- :class:`SearchOptions`: how the tuner searches, beyond what a config says (``--retune``,
  ``--pipeline-depth``, ``--rank``, ``--prefilter``, ``--run-time-sizes``, ``--transfer``);
- :class:`TuneOptions`: every flag of ``autoconv tune``, as given (None: the config's);
- :class:`SearchSettings`: what one :class:`~autoconv.search.tuner.Tuner` searches with, resolved
  (the config's families, budget, seed and workspace limit, under the options).

``autoconv tune`` builds one :class:`TuneOptions` from its command line, a
:class:`~autoconv.search.session.TuneSession` resolves it against the config once, and the session
travels whole (pickled) to the fleet's worker processes. A new flag is a field here and its
``add_argument`` in :mod:`autoconv.commands.tune`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autoconv.config.budget import Budget
from autoconv.errors import UsageError
from autoconv.kernels.space import DEFAULT_WORKSPACE_LIMIT

#: Candidates asked ahead and compiling while the GPU evaluates (shared by the studies a tuner
#: has in flight at once). Deep enough that the host's compilers stay busy while the sampler
#: proposes each candidate without the results of the ones before it.
DEFAULT_PIPELINE_DEPTH = 24


@dataclass(frozen=True)
class SearchOptions:
    """How the tuner searches each problem (the search's defaults are these fields')."""

    #: Search even the problems with a cached winner.
    retune: bool = False
    #: Candidates asked ahead of the GPU, compiling or waiting (at least 1): at most this many
    #: compile at once, and the sampler proposes each without the results of those before it.
    pipeline_depth: int = DEFAULT_PIPELINE_DEPTH
    #: Configurations a study tries after its warm start because a model of the tuning history in
    #: the storage (same GPU, templates and precision) predicts them fastest
    #: (:mod:`~autoconv.search.ranker`; 0: none, and the model is not built for them).
    ranked: int = 0
    #: Skip compiling the candidates that model predicts among the slowest, once it ranks the
    #: study's own candidates well (:mod:`~autoconv.search.prefilter`).
    prefilter: bool = False
    #: Search a family that has one (implicit_gemm_wgmma) in its build with the sizes at run time:
    #: a configuration compiles once for every problem it is tried on; the winner is rebuilt with
    #: constants.
    run_time_sizes: bool = False
    #: Tune a problem by transfer from the tuning history where its model knows enough problems
    #: (:mod:`~autoconv.search.transfer`: the neighbours' winners and the model's picks, then
    #: variations of the best; no sampler, no patience); else by a full study.
    transfer: bool = True


#: The most ``--workers-per-gpu``: each worker is a process with its own compilers, and they take
#: turns on one GPU (2**63 of them once exhausted the host's memory before the first started).
MAX_WORKERS_PER_GPU = 64


@dataclass(frozen=True)
class TuneOptions:
    """The flags of ``autoconv tune`` (None: the config's, or the default named).

    Raises:
        UsageError: ``workers_per_gpu`` is not from 1 to :data:`MAX_WORKERS_PER_GPU`; ``storage``,
            ``cache`` or ``results`` is empty (an empty path is the current folder).
    """

    #: Kernel families to search (None or empty: the config's).
    families: tuple[str, ...] | None = None
    #: The budget per problem: evaluated trials, wall seconds, trials without improvement.
    trials: int | None = None
    seconds: float | None = None
    patience: int | None = None
    #: Optuna storage (a journal file or a SQLAlchemy URL) and the winners' cache (a file or a
    #: URL); see :func:`~autoconv.search.session.cache_location`.
    storage: str | None = None
    cache: str | None = None
    #: The folder ``tune.json`` goes to (None: the config's ``results:``).
    results: str | None = None
    #: Every problem's precision (fp32, tf32, bf16, fp16) and memory layout (NCHW, NHWC).
    precision: str | None = None
    layout: str | None = None
    #: How the tuner searches (``--retune``, ``--pipeline-depth``, ``--rank``, ``--prefilter``,
    #: ``--run-time-sizes``, ``--transfer``).
    search: SearchOptions = field(default_factory=SearchOptions)
    #: The GPUs of this host to tune on with worker processes (``all`` or ``0,1,...``; None: the
    #: config's device, in this process unless several workers share it).
    gpus: str | None = None
    #: Worker processes per GPU (None: :func:`~autoconv.search.fleet.default_workers_per_gpu`).
    workers_per_gpu: int | None = None
    #: No GPU: render and compile ``per_family`` configurations per family and problem with nvcc.
    dry_run: bool = False
    per_family: int = 1

    def __post_init__(self) -> None:
        if self.families is not None:
            object.__setattr__(self, "families", tuple(self.families))  # (a list given: hashable, comparable)
        for flag, value in (("--storage", self.storage), ("--cache", self.cache), ("--results", self.results)):
            if value is not None and not str(value).strip():
                raise UsageError(flag, value, "an empty path; name a file or folder, or leave the flag out for the "
                                 "config's")
        if self.workers_per_gpu is not None and not 1 <= self.workers_per_gpu <= MAX_WORKERS_PER_GPU:
            raise UsageError("--workers-per-gpu", self.workers_per_gpu,
                             f"give 1 to {MAX_WORKERS_PER_GPU} worker processes per GPU")


@dataclass(frozen=True)
class SearchSettings:
    """What a :class:`~autoconv.search.tuner.Tuner` searches with, every value resolved.

    Args:
        families: the kernel families searched.
        budget: per problem: trials, seconds, patience.
        seed: seeds the sampler (per problem) and the verification inputs.
        workspace_limit: bytes of scratch memory a candidate may use.
        search: how it searches (:class:`SearchOptions`).
    """

    families: tuple[str, ...]
    budget: Budget
    seed: int = 0
    workspace_limit: int = DEFAULT_WORKSPACE_LIMIT
    search: SearchOptions = field(default_factory=SearchOptions)

    def __post_init__(self) -> None:
        object.__setattr__(self, "families", tuple(self.families))  # (a list given: hashable, comparable)
