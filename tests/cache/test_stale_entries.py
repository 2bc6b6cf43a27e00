"""Reliability (issue 7): stale cache entries (other templates, another GPU, a source or
config this autoconv would not render): neither ``tune`` nor ``autoconv.conv2d`` uses
them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from autoconv.backends.fake import FAKE_IDENTITY, FakeBackend
from autoconv.cache.entries import CacheEntry, CacheKey
from autoconv.cache.winners import WinnerCache
from autoconv.config.budget import Budget
from autoconv.kernels.families import get_family
from autoconv.kernels.limits import H100
from autoconv.problems.problem import parse_spec
from autoconv.runtime import api as runtime
from autoconv.search.options import SearchSettings
from autoconv.search.outcome import Reporter
from autoconv.search.tuner import Tuner
from tests.helpers import SMALL


def _change_templates(monkeypatch, digest: str) -> None:
    """As if the templates, search spaces or launch code had changed."""
    import autoconv.cache.entries
    import autoconv.search.study

    monkeypatch.setattr(autoconv.cache.entries, "templates_hash", lambda: digest)
    monkeypatch.setattr(autoconv.search.study, "templates_hash", lambda: digest)


def test_changed_templates_or_another_gpu_are_tuned_again(tmp_path, monkeypatch):
    cache_path, journal = tmp_path / "cache.sqlite", str(tmp_path / "j.journal")

    def tune(backend):
        with WinnerCache(cache_path) as cache:
            outcome, = Tuner(backend, SearchSettings(("direct",), Budget(trials=4)),
                             storage=journal, cache=cache).tune([SMALL])
        return outcome

    first = tune(FakeBackend())
    assert first.source == "tuned" and tune(FakeBackend()).source == "cache"
    with monkeypatch.context() as patch:
        _change_templates(patch, "0123456789abcdef")
        changed = tune(FakeBackend())
        assert changed.source == "tuned" and changed.trials_run == 4  # a new study, not the old trials
        assert changed.study_name != first.study_name
        with WinnerCache(cache_path) as cache:
            assert [e.key.is_current for e in cache.entries()].count(False) == 1
    other_gpu = FakeBackend()
    other_gpu.identity = replace(FAKE_IDENTITY, gpu_name="Fake GPU B")
    moved = tune(other_gpu)
    assert moved.source == "tuned" and moved.trials_run == 4
    with WinnerCache(cache_path) as cache:
        keys = sorted((e.key.gpu_name, e.key.templates_hash == "0123456789abcdef") for e in cache.entries())
    assert keys == [(FAKE_IDENTITY.gpu_name, False), (FAKE_IDENTITY.gpu_name, True), ("Fake GPU B", False)]


@pytest.mark.parametrize("change", [{"source_hash": "0" * 16}, {"config": {"TILE_P": 12345}},
                                    {"family": "winograd"}], ids=["other-source", "invalid-config", "no-family"])
def test_a_cached_entry_this_autoconv_cannot_use_is_tuned_again_and_replaced(tmp_path, change):
    cache_path, journal = tmp_path / "cache.sqlite", str(tmp_path / "j.journal")
    family = get_family("direct")
    config = family.space.default_config(SMALL.problem, H100)
    plan = family.plan(SMALL.problem, config, H100)
    if "config" in change:
        change = {"config": {**config, **change["config"]}}
    bad = replace(CacheEntry(key=CacheKey.for_problem(FAKE_IDENTITY, SMALL.problem), family="direct",
                             config=config, kernel_name=plan.name, source_hash=plan.source_hash,
                             time_ms=1e-9, tflops=1.0, workspace_bytes=0), **change)  # faster than anything
    with WinnerCache(cache_path) as cache:
        cache.put(bad)
        reporter_notes = []

        class Notes(Reporter):
            def note(self, text):
                reporter_notes.append(text)
        outcome, = Tuner(FakeBackend(), SearchSettings(("direct",), Budget(trials=3)),
                         storage=journal, cache=cache, reporter=Notes()).tune([SMALL])
        entry, = cache.entries()
    assert outcome.source == "tuned" and outcome.trials_run == 3
    assert any("not using its cached winner" in note for note in reporter_notes) or change.get("family"), \
        reporter_notes
    assert entry.time_ms == outcome.time_ms and entry.kernel_name == outcome.kernel_name
    replanned = family.plan(SMALL.problem, dict(entry.config), H100)
    assert entry.source_hash == replanned.source_hash


def test_conv2d_looks_up_only_current_entries_of_this_gpu(tmp_path, monkeypatch):
    problem = SMALL.problem
    monkeypatch.setattr(runtime.REGISTRY, "_cache_location", tmp_path / "cache.sqlite")
    family = get_family("direct")
    config = dict(family.space.points(problem, H100)[-1])  # a valid config, not the default
    assert config != family.space.default_config(problem, H100)
    plan = family.plan(problem, config, H100)
    entry = CacheEntry(key=CacheKey.for_problem(FAKE_IDENTITY, problem), family="direct", config=config,
                       kernel_name=plan.name, source_hash=plan.source_hash, time_ms=1.0, tflops=1.0,
                       workspace_bytes=plan.workspace_bytes)

    def lookup(identity=FAKE_IDENTITY):
        return runtime.REGISTRY.winner_plan(problem, H100, identity)

    def store(changed):
        WinnerCache.clear(runtime.cache_path())
        with WinnerCache(runtime.cache_path()) as cache:
            cache.put(changed)

    assert lookup()[2] .startswith("no winners' cache")
    store(entry)
    found, origin, _, _ = lookup()
    assert origin == "cache" and found.source_hash == plan.source_hash and dict(found.config) == config
    assert lookup(replace(FAKE_IDENTITY, gpu_name="Fake GPU B"))[0] is None
    assert lookup(replace(FAKE_IDENTITY, cuda_driver=1))[0] is None
    with monkeypatch.context() as patch:
        _change_templates(patch, "0123456789abcdef")
        found, _, why, _ = lookup()
        assert found is None and "no tuned kernel" in why
    for changed, fragment in [
        (replace(entry, source_hash="0" * 16), "stale entry"),
        (replace(entry, config={**config, "TILE_P": 12345}), "no longer fits"),
        (replace(entry, family="winograd"), "not part of this autoconv"),
    ]:
        store(changed)
        found, _, why, _ = lookup()
        assert found is None and fragment in why, why


@pytest.mark.gpu
def test_conv2d_never_runs_a_stale_entry(tmp_path, seed):
    import cupy
    import numpy

    import autoconv
    from autoconv.gpu.device import read_device
    from autoconv.verify.compare import check_result
    from autoconv.verify.reference import conv2d_reference, random_inputs

    limits, identity = read_device(0)
    problem = parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1")
    family = get_family("implicit_gemm")
    config = dict(family.space.points(problem, limits)[-1])
    plan = family.plan(problem, config, limits)
    current = CacheKey.for_problem(identity, problem)
    with WinnerCache(tmp_path / "cache.sqlite") as cache:
        # Entries for this problem that must not be used: a source this autoconv no longer
        # renders, other templates, another GPU.
        cache.put(CacheEntry(key=current, family=family.name, config=config, kernel_name=plan.name,
                             source_hash="0" * 16, time_ms=1e-3, tflops=1.0, workspace_bytes=plan.workspace_bytes))
        for key in (replace(current, templates_hash="f" * 16), replace(current, gpu_name="Another GPU")):
            cache.put(CacheEntry(key=key, family=family.name, config=config, kernel_name=plan.name,
                                 source_hash=plan.source_hash, time_ms=1e-3, tflops=1.0,
                                 workspace_bytes=plan.workspace_bytes))
    runtime.set_cache(tmp_path / "cache.sqlite")
    runtime.clear_loaded()
    try:
        x, w, _ = random_inputs(problem, numpy.random.default_rng(seed))
        with pytest.warns(runtime.UntunedWarning, match="stale entry"):
            y = autoconv.conv2d(cupy.asarray(x), cupy.asarray(w), stride=(2, 1), padding=1)
        assert runtime.REGISTRY.loaded_runner(problem, 0).origin == "default"
        verdict = check_result(cupy.asnumpy(y), conv2d_reference(problem, x, w))
        assert verdict.ok, verdict.message
    finally:
        runtime.set_cache(None)
        runtime.clear_loaded()
