"""Every compiled kernel and replay part against its plain reference, driven by the registry
(:mod:`brainbox.eval.reference`): several sizes and seeds per entry, each case a pure
function of (size, seed) so a failure names the case that reproduces it. Runs under
``NUMBA_DISABLE_JIT=1`` too (the same comparisons, on the Python code of the kernels)."""

import pytest

from brainbox import kernels as K
from brainbox.eval.reference import BY_NAME, REGISTRY, load, references, run

SIZES = {"replay": (200, 700), "baselines": (200, 700)}  # events; replay entries cost most
DEFAULT_SIZES = (1, 7, 60, 400)
SEEDS = range(6)


def cases():
    for e in REGISTRY:
        for size in SIZES.get(e.name, DEFAULT_SIZES):
            for seed in SEEDS if e.name not in SIZES else SEEDS[:2]:
                yield pytest.param(e.name, size, seed, id=f"{e.name}-{size}-{seed}")


@pytest.mark.parametrize("name, size, seed", list(cases()))
def test_compiled_equals_its_plain_reference(name, size, seed):
    compiled, reference, make, check = BY_NAME[name].load()
    args = make(size, seed)
    check(run(compiled, args), run(reference, args))


@pytest.mark.parametrize("entry", REGISTRY, ids=lambda e: e.name)
def test_cases_are_a_pure_function_of_size_and_seed(entry):
    from brainbox.eval.reference.cases import equal

    make = load(entry.cases)
    equal(make(60, 3), make(60, 3))


def test_every_public_kernel_has_a_registry_entry():
    """The engine kernels in ``brainbox.kernels.__all__`` each have an entry (data
    structures and constants aside), and the entries name real callables."""
    public = {getattr(K, n) for n in K.__all__ if callable(getattr(K, n))}
    compiled = {load(e.compiled) for e in REGISTRY if e.compiled.startswith("brainbox.kernels:")}
    evaluator = {f for f in public if f.__name__.startswith("bl_")}  # the replay's, below
    assert public - evaluator == compiled
    for e in REGISTRY:
        assert all(callable(f) for f in e.load()), e.name
    assert set(references()) == compiled


def test_a_reference_that_differs_is_caught():
    """The comparison is not vacuous: another order of ties in a result, or another value
    written into an output argument, fails it."""
    compiled, reference, make, check = BY_NAME["top_k"].load()
    args = make(60, 1)  # odd seeds: integer scores, many ties

    def reversed_ties(ids, scores, k):
        order, sc = reference(ids, scores, k)
        return order[::-1].copy(), sc[::-1].copy()

    with pytest.raises(AssertionError):
        check(run(compiled, args), run(reversed_ties, args))
    compiled, reference, make, check = BY_NAME["rrf_fuse"].load()

    def off_by_one(ranks, lam, gamma, k, out):
        reference(ranks, lam, gamma, k, out)
        out += 1.0

    args = make(60, 0)
    with pytest.raises(AssertionError):
        check(run(compiled, args), run(off_by_one, args))
