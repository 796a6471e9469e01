"""The blocked evaluator against the reference (full partial scores + apply_boundary) and sklearn.

Comparisons of stops with the reference walk the rule (``path="walk"``): with the default
``"auto"`` the evaluator may evaluate every term instead, where its pilot predicts walking would
cost more (tests/test_evaluation_paths.py)."""

import contextlib
import os

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.ensemble import AdaBoostClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

from attentive.boundaries import (
    Boundary,
    budget_boundary,
    curved_boundary,
    full_boundary,
    reference_statistics,
)
from attentive.errors import InvalidParameterError, NonFiniteInput
from attentive.estimator import AttentiveClassifier
from attentive.evaluation import apply_boundary, evaluate, evaluation_options
from attentive.evaluator import block_schedule, evaluate_blocked
from attentive.evaluator.sources import dot as dot_module
from attentive.evaluator.sources.dot import DotKernelSource
from attentive.terms import decompose
from attentive.walk import make_walk


@pytest.fixture(scope="module")
def problem():
    X, y = make_classification(
        n_samples=700, n_features=8, n_informative=5, flip_y=0.05, random_state=3
    )
    return X[:400], y[:400], X[400:]


def _walk(model, X, y, centering="positive"):
    return make_walk(decompose(model), X, y, centering=centering, random_state=0)[0]


def _quantile_boundary(S, side, q=0.15):
    """Constant thresholds at quantiles of the partial scores: many walks stop, many do not."""
    n = S.shape[1]
    # Off the walks' values by far more than rounding: discrete walks (boosting) would otherwise
    # land exactly on a quantile, where two correct summation orders may disagree.
    eps = 1e-7 * (1.0 + np.abs(S).max())
    lo = np.quantile(S, q) + eps if side in ("lower", "both") else -np.inf
    up = np.quantile(S, 1 - q) + eps if side in ("upper", "both") else np.inf
    return Boundary(
        kind="constant",
        side=side,
        lower=np.full(n, lo),
        upper=np.full(n, up),
    )


def _assert_same(ev, ref):
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
    np.testing.assert_array_equal(ev.stopped, ref.stopped)
    np.testing.assert_array_equal(ev.positive, ref.positive)
    np.testing.assert_array_equal(ev.labels, ref.labels)
    scale = 1.0 + np.abs(ref.decision).max()
    done = ~ref.stopped
    np.testing.assert_allclose(ev.decision[done], ref.decision[done], rtol=1e-9, atol=1e-9 * scale)
    np.testing.assert_allclose(
        ev.decision[~done], ref.decision[~done], rtol=1e-9, atol=1e-9 * scale
    )
    assert ev.n_terms == ref.n_terms


def _reference(walk, X, boundary, theta_s):
    S = walk.partial_scores(X)
    return apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes), S


@pytest.mark.parametrize("side", ["lower", "upper", "both"])
@pytest.mark.parametrize(("block_size", "chunk_size"), [(None, None), (1, 7), (13, 1000), (5, 1)])
def test_rbf_constant_matches_reference(problem, side, block_size, chunk_size):
    X, y, Xt = problem
    walk = _walk(SVC(gamma=0.3).fit(X, y), X, y)
    S = walk.partial_scores(Xt)
    theta_s = walk.theta_s(0.0)
    boundary = _quantile_boundary(S, side)
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    assert 0.1 < ref.stopped.mean() < 0.9  # a mix of stopped and full walks
    ev = evaluate_blocked(
        walk, Xt, boundary, theta_s, block_size=block_size, chunk_size=chunk_size, path="walk"
    )
    assert ev.path == "walk"
    _assert_same(ev, ref)


# Both precisions ("mixed": an alias of "single"; 8 features take double precision anyway).
@pytest.mark.parametrize("precision", ["double", "mixed"])
def test_curved_boundary_varies_by_position(problem, precision):
    X, y, Xt = problem
    walk = _walk(SVC(gamma=0.3).fit(X, y), X, y)
    theta_s = walk.theta_s(0.0)
    pos = reference_statistics(walk, X[y == 1])
    neg = reference_statistics(walk, X[y == 0])
    boundary = curved_boundary(pos, 0.2, theta_s, "both", upper_stats=neg)
    ref, _ = _reference(walk, Xt, boundary, theta_s)
    assert ref.stopped.any() and not ref.stopped.all()
    for block_size in (None, 3):
        ev = evaluate_blocked(
            walk, Xt, boundary, theta_s, block_size=block_size, precision=precision, path="walk"
        )
        _assert_same(ev, ref)


def test_full_matches_sklearn_decision_function(problem):
    X, y, Xt = problem
    model = SVC(gamma=0.3).fit(X, y)
    walk = _walk(model, X, y)
    ev = evaluate_blocked(walk, Xt, full_boundary(walk.n_terms), walk.theta_s(0.0))
    assert ev.path == "full"
    np.testing.assert_allclose(ev.decision, model.decision_function(Xt), rtol=1e-9, atol=1e-9)
    assert not ev.stopped.any()
    np.testing.assert_array_equal(ev.n_evaluated, walk.n_terms)
    np.testing.assert_array_equal(ev.labels, model.predict(Xt))


@pytest.mark.parametrize("budget", [1, 17, None])
def test_budget_matches_reference(problem, budget):
    X, y, Xt = problem
    walk = _walk(SVC(gamma=0.3).fit(X, y), X, y)
    boundary = budget_boundary(walk.n_terms, budget or walk.n_terms)
    ref, _ = _reference(walk, Xt, boundary, walk.theta_s(0.0))
    ev = evaluate_blocked(walk, Xt, boundary, walk.theta_s(0.0), chunk_size=50)
    assert ev.path == "budget"
    _assert_same(ev, ref)


def _models(X, y):
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.8, X, 0.0))
    return {
        "linear-dense": (LinearSVC(C=0.5).fit(X, y), X),
        "logistic-sparse": (LogisticRegression().fit(Xs, y), Xs),
        "rbf-sparse": (SVC(gamma=0.3).fit(Xs, y), Xs),
        "poly": (SVC(kernel="poly", degree=2, gamma=0.2).fit(X, y), X),
        "pipeline-rbf": (make_pipeline(StandardScaler(), SVC(gamma=0.2)).fit(X, y), X),
        "adaboost": (AdaBoostClassifier(n_estimators=15, random_state=0).fit(X, y), X),
    }


@pytest.mark.parametrize(
    "name", ["linear-dense", "logistic-sparse", "rbf-sparse", "poly", "pipeline-rbf", "adaboost"]
)
def test_other_models_and_sparse_input(problem, name):
    X, y, Xt = problem
    model, Xfit = _models(X, y)[name]
    Xeval = Xt if not sp.issparse(Xfit) else sp.csr_matrix(np.where(np.abs(Xt) > 0.8, Xt, 0.0))
    walk = _walk(model, Xfit, y, centering="all")
    _walks_and_full_evaluation_match(walk, model, Xeval, block_size=4)


def _walks_and_full_evaluation_match(walk, model, X, block_size):
    """Walks on two boundaries (lower, both) against the reference, full evaluation against
    scikit-learn; returns the partial scores, θ_S and the two-sided boundary."""
    theta_s = walk.theta_s(0.0)
    S = walk.partial_scores(X)
    for side in ("lower", "both"):
        boundary = _quantile_boundary(S, side, q=0.2)
        ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
        ev = evaluate_blocked(walk, X, boundary, theta_s, block_size=block_size, path="walk")
        _assert_same(ev, ref)
    full = evaluate_blocked(walk, X, full_boundary(walk.n_terms), theta_s)
    np.testing.assert_allclose(full.decision, model.decision_function(X), rtol=1e-9, atol=1e-9)
    return S, theta_s, boundary


@pytest.mark.parametrize(
    "model",
    [
        SVC(kernel="linear", C=0.3),
        SVC(kernel="poly", degree=3, gamma=0.2, coef0=0.5),
        SVC(kernel="sigmoid", gamma=0.05, coef0=-0.2),
    ],
    ids=["linear", "poly-3", "sigmoid"],
)
def test_dot_kernels_walk_their_own_blocks(problem, model, monkeypatch):
    """Dense linear / polynomial / sigmoid kernels: blocks are products with the support vectors
    in walk order (DotKernelSource), checked against the reference walk and scikit-learn."""
    X, y, Xt = problem
    model = model.fit(X, y)
    walk = _walk(model, X, y, centering="all")
    calls, kernel_values = [], []
    block = DotKernelSource.block
    monkeypatch.setattr(
        DotKernelSource, "block", lambda self, *a: (calls.append(a[:2]), block(self, *a))[1]
    )
    kernel = dot_module.dot_kernel
    monkeypatch.setattr(
        dot_module, "dot_kernel", lambda K, *a: (kernel_values.append(K.size), kernel(K, *a))[1]
    )
    S, theta_s, boundary = _walks_and_full_evaluation_match(walk, model, Xt, block_size=8)
    assert calls and calls[0] == (0, 8)
    # Full evaluation computes every term of every row once, a budget the first B only.
    del kernel_values[:]
    evaluate_blocked(walk, Xt, full_boundary(walk.n_terms), theta_s)
    assert sum(kernel_values) == len(Xt) * walk.n_terms
    del kernel_values[:]
    half = walk.n_terms // 2
    budget = budget_boundary(walk.n_terms, half)
    ref = apply_boundary(S, budget, theta_s, walk.offset, walk.terms.classes)
    _assert_same(evaluate_blocked(walk, Xt, budget, theta_s), ref)
    assert sum(kernel_values) == len(Xt) * half
    # Non-finite rows are refused on every path: walk, full, budget, a tiny problem in one go.
    bad = Xt.copy()
    bad[5, 2] = np.inf
    tiny = bad[:40]
    assert tiny.shape[0] * walk.n_terms <= 2**15
    for rows, b, kw in [
        (bad, boundary, {"block_size": 8}),
        (bad, boundary, {}),
        (bad, full_boundary(walk.n_terms), {}),
        (bad, budget, {}),
        (tiny, boundary, {}),
    ]:
        with pytest.raises(NonFiniteInput, match="Input X contains NaN or infinity"):
            evaluate_blocked(walk, rows, b, theta_s, **kw)
    with pytest.raises(ValueError, match=r"2-D array \(n_examples, n_features\); got shape \(8,\)"):
        evaluate_blocked(walk, Xt[0], full_boundary(walk.n_terms), theta_s)
    for b in (boundary, full_boundary(walk.n_terms)):
        with pytest.raises(ValueError, match="2-D array of 8 features; got shape"):
            evaluate_blocked(walk, Xt[:, :-1], b, theta_s)


def test_estimator_goes_through_blocked_path_with_options(problem):
    X, y, Xt = problem
    clf = AttentiveClassifier(
        SVC(gamma=0.3), delta=0.3, side="both", random_state=0, early_stopping=True
    ).fit(X, y)
    S = clf.walk_.partial_scores(Xt)
    ref = apply_boundary(S, clf.boundary_, clf.theta_s_, clf.offset_, clf.classes_)
    assert ref.stopped.any()
    _assert_same(clf.evaluate(Xt), ref)
    with evaluation_options(block_size=2, chunk_size=9):
        _assert_same(clf.evaluate(Xt), ref)
        np.testing.assert_array_equal(clf.predict(Xt), ref.labels)
    ev = evaluate(clf.walk_, Xt, clf.boundary_, clf.theta_s_, block_size=1000, path="walk")
    _assert_same(ev, ref)


def test_empty_input_and_single_example(problem):
    X, y, Xt = problem
    walk = _walk(SVC(gamma=0.3).fit(X, y), X, y)
    S = walk.partial_scores(Xt[:1])
    boundary = _quantile_boundary(walk.partial_scores(Xt), "both")
    for path in ("walk", "auto", "full"):
        ev = evaluate_blocked(walk, Xt[:0], boundary, walk.theta_s(0.0), path=path)
        assert ev.decision.shape == ev.labels.shape == ev.n_evaluated.shape == (0,)
    ref = apply_boundary(S, boundary, walk.theta_s(0.0), walk.offset, walk.terms.classes)
    _assert_same(evaluate_blocked(walk, Xt[:1], boundary, walk.theta_s(0.0), path="walk"), ref)


def test_block_schedule_covers_all_positions():
    for n, size in [(1, None), (5, None), (1000, None), (10, 3), (10, 20)]:
        edges = block_schedule(n, size).edges
        assert edges[0] == 0 and edges[-1] == n
        assert np.all(np.diff(edges) > 0)
    sizes = block_schedule(1000).sizes
    assert sizes[0] < sizes[-2]  # small first blocks, growing


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "16"])
def test_bad_sizes_are_rejected(problem, bad):
    X, y, Xt = problem
    walk = _walk(SVC(gamma=0.3).fit(X, y), X, y)
    boundary = full_boundary(walk.n_terms)
    with pytest.raises(InvalidParameterError, match="block_size"):
        evaluate_blocked(walk, Xt, boundary, 0.0, block_size=bad)
    with pytest.raises(InvalidParameterError, match="chunk_size"):
        evaluation_options(chunk_size=bad).__enter__()


def test_bench_quick_prints_parsable_json_with_full_matching_sklearn(capsys):
    import json

    from attentive.bench import main

    argv = ["--quick", "--problems", "digits-2v5", "--rounds", "1", "--keep-blas-env"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    digits = result["problems"]["digits-2v5"]
    assert digits["full_labels_match_sklearn"]
    assert digits["full_vs_sklearn_max_abs_diff"] < 1e-9
    assert digits["disagreement"] <= 0.01
    assert 0 < digits["f"] <= 1 and digits["path"] in ("walk", "full")


# ----------------------------------------------------------------------------- speed paths


@pytest.fixture(scope="module")
def sparse_problem():
    """Sparse rows over many features (text-like), with empty rows and a last-feature non-zero."""
    rng = np.random.default_rng(5)
    n_rows, n_features = 900, 400
    X = sp.random(n_rows, n_features, density=0.04, random_state=rng, format="csr")
    X.data = rng.exponential(size=X.data.size)
    w_true = rng.normal(size=n_features)
    y = (X @ w_true + 0.3 * rng.normal(size=n_rows) > 0).astype(int)
    X = X.tolil()
    X[600, :] = 0.0  # an evaluated row with no non-zero at all
    X[601, n_features - 1] = 2.5  # ... and one whose only non-zero is a late feature
    X = X.tocsr()
    X.eliminate_zeros()
    return X[:500], y[:500], X[500:]


def _sparse_boundaries(walk, S, theta_s, X_ref, y_ref):
    out = {
        f"quantile-{side}": _quantile_boundary(S, side, q=0.2)
        for side in ("lower", "upper", "both")
    }
    pos = reference_statistics(walk, X_ref[y_ref == 1])
    neg = reference_statistics(walk, X_ref[y_ref == 0])
    for side in ("lower", "upper", "both"):
        out[f"curved-{side}"] = curved_boundary(pos, 0.1, theta_s, side, upper_stats=neg)
    return out


@pytest.mark.parametrize("model", ["linearsvc", "logistic"])
def test_sparse_linear_walk_matches_reference(sparse_problem, model):
    X, y, Xt = sparse_problem
    est = LinearSVC(C=0.5) if model == "linearsvc" else LogisticRegression(C=2.0)
    walk = _walk(est.fit(X, y), X, y, centering="all")
    theta_s = walk.theta_s(0.0)
    S = walk.partial_scores(Xt)
    for name, boundary in _sparse_boundaries(walk, S, theta_s, X, y).items():
        ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
        assert ref.stopped.any(), name
        for kwargs in ({}, {"chunk_size": 37, "n_jobs": 2}, {"n_jobs": 3}, {"block_size": 7}):
            ev = evaluate_blocked(walk, Xt, boundary, theta_s, path="walk", **kwargs)
            assert ev.path == "walk"
            _assert_same(ev, ref)
        # "auto": never walked (one sparse product is faster): the full model's decisions.
        auto = evaluate_blocked(walk, Xt, boundary, theta_s)
        assert auto.path == "full"
        np.testing.assert_allclose(auto.decision, est.decision_function(Xt), rtol=1e-9, atol=1e-9)


def test_sparse_linear_budget_and_full_match_reference(sparse_problem):
    X, y, Xt = sparse_problem
    model = LinearSVC(C=0.5).fit(X, y)
    walk = _walk(model, X, y, centering="all")
    theta_s = walk.theta_s(0.0)
    S = walk.partial_scores(Xt)
    for budget in (1, 57, walk.n_terms):
        boundary = budget_boundary(walk.n_terms, budget)
        ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
        _assert_same(evaluate_blocked(walk, Xt, boundary, theta_s), ref)
    full = evaluate_blocked(walk, Xt, full_boundary(walk.n_terms), theta_s)
    np.testing.assert_allclose(full.decision, model.decision_function(Xt), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    "model",
    [
        SVC(gamma=0.5),
        SVC(kernel="linear", C=0.3),
        SVC(kernel="poly", degree=3, gamma=0.5, coef0=0.5),
        SVC(kernel="sigmoid", gamma=0.05, coef0=-0.2),
    ],
    ids=["rbf", "linear", "poly-3", "sigmoid"],
)
def test_sparse_kernel_models_walk_their_own_blocks(sparse_problem, model, monkeypatch):
    """Sparse support vectors and rows: a block is one sparse product with the rows held
    transposed (SparseKernelSource), checked against the reference walk (compactions, chunks)
    and scikit-learn; full and budgeted evaluation take the same product per tile, on one
    thread; bad rows are refused on every path."""
    import sklearn

    from attentive.evaluator import blocked as blocked_module
    from attentive.evaluator import totals as totals_module
    from attentive.evaluator.sources import sparse_kernel as sparse_module
    from attentive.evaluator.sources.sparse_kernel import SparseKernelSource

    if sparse_module.sparse_matmul_to_dense is None:
        # The product is scikit-learn's from 1.8: fail, not skip, if a later one lost it.
        version = tuple(int(p) for p in sklearn.__version__.split(".")[:2])
        assert version < (1, 8), "scikit-learn's sparse_matmul_to_dense is missing"
        pytest.skip("scikit-learn < 1.8: sparse kernel models take the generic path")
    X, y, Xt = sparse_problem
    model = model.fit(X, y)
    assert sp.issparse(model.support_vectors_)
    walk = _walk(model, X, y, centering="all")
    calls, kept = [], []
    block, keep = SparseKernelSource.block, SparseKernelSource.keep
    monkeypatch.setattr(
        SparseKernelSource, "block", lambda self, *a: (calls.append(a[:2]), block(self, *a))[1]
    )
    monkeypatch.setattr(
        SparseKernelSource, "keep", lambda self, idx: (kept.append(idx.size), keep(self, idx))[1]
    )
    products = []
    product = sparse_module.sparse_matmul_to_dense
    monkeypatch.setattr(
        sparse_module,
        "sparse_matmul_to_dense",
        lambda A, B, out: (products.append(out.size), product(A, B, out=out))[1],
    )
    theta_s = walk.theta_s(0.0)
    S = walk.partial_scores(Xt)
    boundaries = _sparse_boundaries(walk, S, theta_s, X, y)
    for name in ("quantile-lower", "quantile-both", "curved-both"):
        ref = apply_boundary(S, boundaries[name], theta_s, walk.offset, walk.terms.classes)
        assert ref.stopped.any(), name
        for kwargs in ({"block_size": 8}, {"chunk_size": 37, "n_jobs": 2}, {}):
            ev = evaluate_blocked(walk, Xt, boundaries[name], theta_s, path="walk", **kwargs)
            _assert_same(ev, ref)
    assert calls and calls[0] == (0, 8)
    assert kept, "no compaction of the rows held was exercised"
    # The same rows as float32, each value split into two halves (duplicate entries, which
    # scipy sums), the first halves in reverse order (unsorted indices).
    counts = np.diff(Xt.indptr)
    data, indices = [], []
    for i in range(Xt.shape[0]):
        row = slice(Xt.indptr[i], Xt.indptr[i + 1])
        half = (Xt.data[row] / 2).astype(np.float32)
        data += [half[::-1], half]
        indices += [Xt.indices[row][::-1], Xt.indices[row]]
    twice = sp.csr_matrix(
        (np.concatenate(data), np.concatenate(indices), np.append(0, np.cumsum(2 * counts))),
        shape=Xt.shape,
    )
    assert twice.dtype == np.float32 and not twice.has_canonical_format
    ev = evaluate_blocked(
        walk, twice, boundaries["curved-both"], theta_s, block_size=8, path="walk"
    )
    ref = apply_boundary(
        walk.partial_scores(Xt.astype(np.float32).astype(np.float64)),
        boundaries["curved-both"],
        theta_s,
        walk.offset,
        walk.terms.classes,
    )
    _assert_same(ev, ref)
    # Full and budgeted evaluation: sparse products of every row with every support vector
    # once, or with the budget's first ones, in one tile or in tiles of rows.
    n = walk.n_terms
    for chunk in (None, 150):
        del products[:]
        full = evaluate_blocked(walk, Xt, full_boundary(n), theta_s, chunk_size=chunk)
        np.testing.assert_allclose(full.decision, model.decision_function(Xt), rtol=1e-9, atol=1e-9)
        assert sum(products) == Xt.shape[0] * n and len(products) >= (1 if chunk is None else 2)
    half = n // 2
    budget = budget_boundary(n, half)
    ref = apply_boundary(S, budget, theta_s, walk.offset, walk.terms.classes)
    del products[:]
    _assert_same(evaluate_blocked(walk, Xt, budget, theta_s), ref)
    assert sum(products) == Xt.shape[0] * half
    # NaN or infinite values and another width are refused on every path: walk, full, budget.
    bad = Xt.copy()
    bad.data[7] = np.nan
    for rows, b, kw in [
        (bad, boundaries["curved-both"], {"block_size": 8}),
        (bad, full_boundary(walk.n_terms), {}),
        (bad, budget, {}),
    ]:
        with pytest.raises(NonFiniteInput, match="Input X contains NaN or infinity"):
            evaluate_blocked(walk, rows, b, theta_s, **kw)
    narrow = Xt[:, :-1]
    for b in (boundaries["curved-both"], full_boundary(walk.n_terms)):
        with pytest.raises(ValueError, match="2-D array of 400 features; got shape"):
            evaluate_blocked(walk, narrow, b, theta_s, block_size=8)
    # One thread however many are asked for (the product holds the GIL); the generic path,
    # without scikit-learn's product, still takes two, and gives the same answers.
    jobs = []
    monkeypatch.setattr(blocked_module, "WALK_ROWS_PER_THREAD", 1)
    monkeypatch.setattr(blocked_module, "THREADED_WALK_NS", 0.0)
    for module in (blocked_module, totals_module):
        monkeypatch.setattr(module, "PARALLEL_MIN_ELEMENTS", 0)
        run = module.run_tasks
        monkeypatch.setattr(
            module,
            "run_tasks",
            lambda tasks, n, run=run, **kw: (jobs.append(n), run(tasks, n, **kw))[1],
        )
    ref = apply_boundary(S, boundaries["curved-both"], theta_s, walk.offset, walk.terms.classes)
    for generic in (False, True):
        if generic:
            monkeypatch.setattr(sparse_module, "sparse_matmul_to_dense", None)
        del calls[:], jobs[:]
        ev = evaluate_blocked(
            walk,
            Xt,
            boundaries["curved-both"],
            theta_s,
            block_size=8,
            chunk_size=50,
            n_jobs=2,
            path="walk",
        )
        _assert_same(ev, ref)
        full = evaluate_blocked(walk, Xt, full_boundary(walk.n_terms), theta_s, n_jobs=2)
        np.testing.assert_allclose(full.decision, model.decision_function(Xt), rtol=1e-9, atol=1e-9)
        assert len(jobs) == 2 and set(jobs) == ({2} if generic else {1})
        assert bool(calls) != generic


def test_sparse_table_queries_against_brute_force():
    from attentive.evaluator.sources.sparse_linear import first_above, sparse_table

    rng = np.random.default_rng(11)
    g = rng.normal(size=97)
    g[rng.integers(0, 97, 10)] = -np.inf
    T = sparse_table(g)
    a = rng.integers(0, 97, 500)
    b = np.minimum(97, a + rng.integers(0, 60, 500))
    v = rng.normal(size=500)
    got = first_above(T, a, b, v)
    for i in range(500):
        above = np.flatnonzero(g[a[i] : b[i]] > v[i])
        assert got[i] == (a[i] + above[0] if above.size else b[i])


@pytest.mark.parametrize("n_jobs", [1, 2, 3])
def test_threads_give_identical_results(problem, n_jobs, monkeypatch):
    from attentive.evaluator import blocked as blocked_module
    from attentive.evaluator import totals as totals_module

    # Threads for these few rows (the defaults keep a call this small on one thread).
    monkeypatch.setattr(blocked_module, "WALK_ROWS_PER_THREAD", 1)
    monkeypatch.setattr(blocked_module, "THREADED_WALK_NS", 0.0)
    for module in (blocked_module, totals_module):
        monkeypatch.setattr(module, "PARALLEL_MIN_ELEMENTS", 0)
    X, y, Xt = problem
    walk = _walk(SVC(gamma=0.3).fit(X, y), X, y)
    theta_s = walk.theta_s(0.0)
    S = walk.partial_scores(Xt)
    for boundary in (
        _quantile_boundary(S, "both"),
        full_boundary(walk.n_terms),
        budget_boundary(walk.n_terms, 23),
    ):
        ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
        ev = evaluate_blocked(
            walk, Xt, boundary, theta_s, chunk_size=41, n_jobs=n_jobs, path="walk"
        )
        _assert_same(ev, ref)
    with evaluation_options(n_jobs=n_jobs, chunk_size=50):
        boundary = _quantile_boundary(S, "lower")
        ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
        _assert_same(evaluate(walk, Xt, boundary, theta_s, path="walk"), ref)


def test_a_walk_takes_a_thread_per_walk_rows_per_thread(problem, monkeypatch):
    """A walk takes no more threads than it has WALK_ROWS_PER_THREAD rows for (its chunks' small
    operations hold the interpreter lock: two threads walking a few thousand rows wait on each
    other), one where the pilot prices its rows as cheap, and the stops are the same however
    many it takes."""
    from attentive.evaluator import blocked as blocked_module
    from attentive.evaluator import threads as threads_module
    from attentive.evaluator.plan import walk_plan

    X, y, Xt = problem  # 300 rows
    walk = _walk(SVC(gamma=0.3).fit(X, y), X, y)
    theta_s = walk.theta_s(0.0)
    S = walk.partial_scores(Xt)
    boundary = _quantile_boundary(S, "both")
    ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
    jobs = []
    run = blocked_module.run_tasks
    monkeypatch.setattr(
        blocked_module,
        "run_tasks",
        lambda tasks, n, **kw: (jobs.append((len(tasks), n)), run(tasks, n, **kw))[1],
    )
    monkeypatch.setattr(blocked_module, "PARALLEL_MIN_ELEMENTS", 0)
    monkeypatch.setattr(blocked_module, "THREADED_WALK_NS", 0.0)  # (cheap walks: below)
    for per_thread, expected in ((400, 1), (150, 2), (100, 3), (1, 3)):
        monkeypatch.setattr(blocked_module, "WALK_ROWS_PER_THREAD", per_thread)
        del jobs[:]
        ev = evaluate_blocked(walk, Xt, boundary, theta_s, chunk_size=41, n_jobs=3, path="walk")
        _assert_same(ev, ref)
        assert [n for _, n in jobs] == [expected], per_thread
        # the rows are cut into a multiple of the threads taken (split_rows)
        assert jobs[0][0] % expected == 0
    # Rows the pilot prices below THREADED_WALK_NS a walk are walked on one thread, with BLAS
    # held to one thread there too; at the price, on their threads. The same stops either way.
    (pilot,) = walk_plan(walk).pilots(boundary).by_kind.values()
    assert pilot.walk_ns == pytest.approx(pilot.walk_cost * pilot.term_ns) and pilot.walk_ns > 0
    blas = []
    monkeypatch.setattr(blocked_module, "WALK_ROWS_PER_THREAD", 1)
    monkeypatch.setattr(
        threads_module, "_one_blas_thread", lambda: blas.append(1) or contextlib.nullcontext()
    )
    for threshold, expected in ((np.nextafter(pilot.walk_ns, np.inf), 1), (pilot.walk_ns, 3)):
        monkeypatch.setattr(blocked_module, "THREADED_WALK_NS", threshold)
        del jobs[:], blas[:]
        ev = evaluate_blocked(walk, Xt, boundary, theta_s, chunk_size=41, n_jobs=3, path="walk")
        _assert_same(ev, ref)
        assert [n for _, n in jobs] == [expected] and blas == [1], threshold


def test_tiny_problem_path_matches_reference(problem):
    from attentive.evaluator.walk import SMALL_PREFIX_PRODUCT

    X, y, Xt = problem
    lengths = []
    for model, centering, rows in (
        (SVC(gamma=0.3), "positive", 400),  # n > SMALL_PREFIX_PRODUCT: cumsum
        (SVC(gamma=0.3), "positive", 60),  # n ≤ SMALL_PREFIX_PRODUCT: triangular product
        (LinearSVC(C=0.5), "all", 400),  # 8 features, not an RBF walk
    ):
        walk = _walk(model.fit(X[:rows], y[:rows]), X[:rows], y[:rows], centering=centering)
        lengths.append(walk.n_terms)
        S = walk.partial_scores(Xt[:20])  # 20 × n terms: the one-tile path
        theta_s = walk.theta_s(0.0)
        for side in ("lower", "upper", "both"):
            boundary = _quantile_boundary(S, side, q=0.3)
            ref = apply_boundary(S, boundary, theta_s, walk.offset, walk.terms.classes)
            ev = evaluate_blocked(walk, Xt[:20], boundary, theta_s)  # "auto": tiny calls walk
            assert ev.path == "walk"
            _assert_same(ev, ref)
    assert lengths[0] > SMALL_PREFIX_PRODUCT >= max(lengths[1:])


def test_blas_held_from_two_threads_at_once_is_given_back_once_both_leave(monkeypatch):
    """The BLAS limit is the process's: callers on two threads share one hold, and BLAS gets its
    threads back when the last leaves, not when the first does (nor stays on one for good).
    (A controller standing in for threadpoolctl's: OpenBLAS itself may ignore a limit set from
    a thread other than the main one, depending on what the process did before.)"""
    import threading

    from attentive.evaluator import threads as threads_module

    class Controller:
        threads = 2

        def limit(self, limits, user_api):
            controller, original = self, self.threads
            controller.threads = limits

            class Limiter:
                def restore_original_limits(self):
                    controller.threads = original

            return Limiter()

    blas = Controller()
    monkeypatch.setattr(threads_module, "thread_pools", lambda: blas)
    entered, leave_a, left_a, leave_b = (threading.Event() for _ in range(4))
    seen = {}

    def a():
        with threads_module._one_blas_thread():
            entered.set()
            leave_a.wait(10)
        left_a.set()

    def b():
        entered.wait(10)
        with threads_module._one_blas_thread():
            seen["inside"] = blas.threads
            leave_a.set()
            left_a.wait(10)
            seen["after a left"] = blas.threads
            leave_b.wait(10)

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    left_a.wait(10)
    leave_b.set()
    for t in threads:
        t.join(10)
    assert seen == {"inside": 1, "after a left": 1}
    assert blas.threads == 2
    with threads_module._one_blas_thread():  # and again, from scratch
        assert blas.threads == 1
    assert blas.threads == 2


@pytest.mark.parametrize("n_tasks", [1, 2, 7, 164])
@pytest.mark.parametrize("n_jobs", [1, 2, 3])
def test_run_tasks_calls_each_task_once_and_keeps_the_order(n_tasks, n_jobs):
    import threading
    import time

    from attentive.evaluator.threads import run_tasks

    calls, threads = [], {}

    def task(i):
        def go():
            calls.append(i)
            threads.setdefault(threading.current_thread().name, []).append(i)
            time.sleep(0.001)  # long enough for every thread to be working at once
            return i * i

        return go

    assert run_tasks([task(i) for i in range(n_tasks)], n_jobs) == [i * i for i in range(n_tasks)]
    assert sorted(calls) == list(range(n_tasks))
    # One hand-off per share: every k-th task (k = min(n_jobs, n_tasks)) runs on one thread, in
    # order. (A thread may run two shares if another was slow to start; a share never splits.)
    shares = min(n_jobs, n_tasks)
    assert len(threads) <= shares
    where = {i: name for name, ran in threads.items() for i in ran}
    for j in range(shares):
        share = list(range(j, n_tasks, shares))
        assert len({where[i] for i in share}) == 1
        ran = threads[where[j]]
        assert [i for i in ran if i % shares == j] == share


def test_default_threads_from_environment(monkeypatch):
    from attentive.evaluator import default_n_jobs

    monkeypatch.setenv("ATTENTIVE_N_JOBS", "3")
    assert default_n_jobs() == 3
    monkeypatch.delenv("ATTENTIVE_N_JOBS")
    assert 1 <= default_n_jobs() <= 8
    for bad in ("0", "many", "1.5"):
        monkeypatch.setenv("ATTENTIVE_N_JOBS", bad)
        with pytest.raises(InvalidParameterError, match="ATTENTIVE_N_JOBS"):
            default_n_jobs()


def test_negative_thread_counts_count_back_from_the_cores(monkeypatch):
    """As scikit-learn reads n_jobs: -1 every usable core, -2 all but one, never fewer than one."""
    from attentive.evaluator import default_n_jobs, threads

    monkeypatch.setattr(threads, "usable_cores", lambda: 6)
    assert [threads.resolve_n_jobs(v) for v in (3, -1, -2, -6, -50)] == [3, 6, 5, 1, 1]
    monkeypatch.setenv("ATTENTIVE_N_JOBS", "-1")
    assert default_n_jobs() == 6
    monkeypatch.setenv("ATTENTIVE_N_JOBS", "-2")
    assert default_n_jobs() == 5


def test_minus_one_thread_count_evaluates_like_one(problem, monkeypatch):
    """n_jobs=-1 is accepted everywhere n_jobs is, and runs the threads it resolves to."""
    from attentive.evaluator import threads

    X, y, Xt = problem
    walk = _walk(SVC(gamma=0.3).fit(X, y), X, y)
    boundary = full_boundary(walk.n_terms)
    Xt = np.repeat(Xt, 40, axis=0)  # past the size below which one thread is used
    one = evaluate_blocked(walk, Xt, boundary, 0.0, n_jobs=1, chunk_size=64)
    seen = []
    original = threads.run_tasks
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    monkeypatch.setattr(
        "attentive.evaluator.totals.run_tasks",
        lambda tasks, n_jobs, **kw: seen.append(n_jobs) or original(tasks, n_jobs, **kw),
    )
    with evaluation_options(n_jobs=-1):
        every = evaluate(walk, Xt, boundary, 0.0, chunk_size=64)
    np.testing.assert_allclose(every.decision, one.decision, rtol=0, atol=1e-12)
    assert seen and set(seen) == {2}


@pytest.mark.parametrize("bad", [0, 1.5, True, "2"])
def test_bad_thread_counts_are_rejected(problem, bad):
    X, y, Xt = problem
    walk = _walk(SVC(gamma=0.3).fit(X, y), X, y)
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        evaluate_blocked(walk, Xt, full_boundary(walk.n_terms), 0.0, n_jobs=bad)
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        evaluation_options(n_jobs=bad).__enter__()


def test_split_covers_rows_in_a_multiple_of_the_thread_count():
    from attentive.evaluator.threads import split_rows

    for m, step, jobs in [(10, 3, 1), (10, 3, 2), (10000, 8192, 2), (5, 100, 4), (1, 1, 3)]:
        ranges = split_rows(m, step, jobs)
        covered = np.concatenate([np.arange(lo, hi) for lo, hi in ranges])
        np.testing.assert_array_equal(covered, np.arange(m))
        assert all(hi - lo <= max(step, 1) for lo, hi in ranges)
        if jobs > 1 and m >= jobs:
            assert len(ranges) % jobs == 0


# ----------------------------------------------------------------------------- survival schedule


def test_survival_schedule_is_the_cheapest_partition_by_brute_force():
    """The dynamic programme against every partition of a short walk into blocks, and the
    predicted cost it returns against that partition's cost."""
    import itertools

    from attentive.evaluator import survival_schedule

    rng = np.random.default_rng(0)
    n, row_cost = 12, 3.0
    stops = np.minimum(rng.geometric(0.3, size=50), n)

    def cost(edges, term_cost=1.0):
        alive = [np.mean(stops > a) for a in edges[:-1]]
        alive = np.maximum(alive, 0.5 / stops.size)
        return float(np.sum(alive * (row_cost + term_cost * np.diff(edges))))

    best = min(
        cost([0, *inner, n]) for r in range(n) for inner in itertools.combinations(range(1, n), r)
    )
    schedule, predicted = survival_schedule(stops, n, row_cost, min_block=1, max_block=n)
    assert schedule.edges[0] == 0 and schedule.edges[-1] == n
    assert np.all(schedule.sizes >= 1)
    assert cost(schedule.edges) == pytest.approx(best)
    assert predicted == pytest.approx(best)  # the cost the pilot compares with full evaluation
    # With a cost per term, the same search: every term costs that much more.
    _, dearer = survival_schedule(stops, n, row_cost, term_cost=3.0, min_block=1, max_block=n)
    best3 = min(
        cost([0, *inner, n], term_cost=3.0)
        for r in range(n)
        for inner in itertools.combinations(range(1, n), r)
    )
    assert dearer == pytest.approx(best3)


def test_survival_schedule_follows_the_stops():
    from attentive.evaluator import survival_schedule

    n = 800
    early, early_cost = survival_schedule(np.full(100, 5), n, 10.0)  # every walk stops at 5
    late, late_cost = survival_schedule(np.full(100, n), n, 10.0)  # none stops
    assert early.edges[1] <= 8  # the first block ends where the walks stop
    assert late.sizes.min() >= 32  # nothing to gain from small blocks
    assert early.edges[-1] == late.edges[-1] == n
    # Walks that stop at 5 cost a few terms; walks that never stop cost every term and more.
    assert early_cost < 0.1 * n < n < late_cost


def test_walks_after_the_pilot_use_the_survival_schedule_and_match_the_reference():
    """A call large enough for a pilot, then a second call with the kept pilot: the pilot's stops
    are the reference's on the rows it walked, its blocks cover the walk, and both calls walk
    as the reference does (float32 products: values of walks that never stop within their
    certified band, about 1e-5 of Σ|w| here)."""
    from attentive.evaluator.pilot import pilot_rows
    from attentive.evaluator.plan import walk_plan

    X, y = make_classification(n_samples=1400, n_features=100, random_state=3)
    walk = _walk(SVC(gamma="scale").fit(X[:400], y[:400]), X[:400], y[:400])
    pos = reference_statistics(walk, X[:400][y[:400] == 1])
    neg = reference_statistics(walk, X[:400][y[:400] == 0])
    boundary = curved_boundary(pos, 0.1, walk.theta_s(0.0), "both", upper_stats=neg)
    theta_s = walk.theta_s(0.0)
    Xt = X[400:]
    ref = apply_boundary(
        walk.partial_scores(Xt), boundary, theta_s, walk.offset, walk.terms.classes
    )
    assert 0 < ref.mean_evaluated_fraction < 0.9
    band = 1e-5 * float(np.abs(walk.ordered_weights).sum())
    for precision in ("double", "double", "mixed"):
        ev = evaluate_blocked(
            walk, Xt, boundary, theta_s, n_jobs=1, precision=precision, path="walk"
        )
        np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
        np.testing.assert_array_equal(ev.stop_side, ref.stop_side)
        np.testing.assert_array_equal(ev.labels, ref.labels)
        atol = 1e-9 if precision == "double" else band
        np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=atol)
    # One pilot per kind of rows (here the two precisions' sources), by the source's kind.
    kept = walk_plan(walk).pilots(boundary).by_kind
    pilots = {source.kind: pilot for (source, *_), pilot in kept.items()}
    assert len(kept) == 2 and set(pilots) == {"rbf", "rbf-single"}
    pilot = pilots["rbf"]
    assert pilots["rbf-single"].stops is pilot.stops  # from one sample of stops
    np.testing.assert_array_equal(pilot.stops, ref.n_evaluated[pilot_rows(len(Xt))])
    edges = pilot.schedule.edges
    assert edges[0] == 0 and edges[-1] == walk.n_terms and np.all(np.diff(edges) > 0)
    assert pilot.full_cost == walk.n_terms and pilot.walk_cost > 0
    # "auto" follows the kept pilot: it walks where the pilot predicts walking pays.
    auto = evaluate_blocked(walk, Xt[:300], boundary, theta_s, precision="double")
    assert auto.path == ("walk" if pilot.walk_pays else "full")


# ----------------------------------------------------------------------------- scratch arrays


def test_scratch_arrays_are_kept_per_thread_and_bounded():
    import threading

    from attentive.evaluator import release_scratch
    from attentive.evaluator.scratch import _SCRATCH_MAX_BYTES, scratch

    bufs = scratch()
    assert scratch() is bufs
    a = bufs.get("probe", (3, 4))
    b = bufs.get("probe", (2, 5))  # smaller: the same memory
    assert np.shares_memory(a, b)
    assert not np.shares_memory(a, bufs.get("probe", (3, 4), np.float32))  # another dtype
    c = bufs.get("probe", (40, 50))  # larger: grown, and kept
    assert not np.shares_memory(a, c) and np.shares_memory(c, bufs.get("probe", (1, 7)))
    rows = _SCRATCH_MAX_BYTES // 8 + 1
    huge = bufs.get("huge", (rows, 1))
    assert not np.shares_memory(huge, bufs.get("huge", (1, 1)))  # too large to keep
    other = []
    thread = threading.Thread(target=lambda: other.append(scratch()))
    thread.start()
    thread.join()
    assert other[0] is not bufs
    # Released, in every thread: the next request allocates.
    kept = other[0].get("probe", (5, 5))
    release_scratch()
    assert not np.shares_memory(c, bufs.get("probe", (1, 7)))
    assert not np.shares_memory(kept, other[0].get("probe", (5, 5)))


def test_evaluator_threads_one_per_share():
    """Calls with n_jobs from 1 to 8 keep 8 threads (not a pool per thread count, 35), and a
    call's share j always runs on the same thread: after them, calls with 2 threads leave
    scratch arrays in 2 of the evaluator's threads only (one shared pool handed the shares to
    whichever threads were idle, and over many calls every thread grew its scratch)."""
    import threading
    import time

    from attentive.evaluator import release_scratch, threads
    from attentive.evaluator import scratch as scratch_module

    def pool_threads():
        return [t for t in threading.enumerate() if t.name.startswith("attentive_")]

    def work(j):
        scratch_module.scratch().get("probe", (4, 4))  # every thread that runs a task keeps a set
        time.sleep(0.001)
        return threading.get_ident(), j

    size = max(8, len(getattr(threads, "_WORKERS", ())))  # an earlier test may have asked more
    for n_jobs in range(1, 9):
        tasks = [lambda j=j: work(j) for j in range(3 * n_jobs)]
        got = threads.run_tasks(tasks, n_jobs)
        assert [j for _, j in got] == list(range(3 * n_jobs))
    assert len(pool_threads()) == size
    release_scratch()
    per_call = []
    for _ in range(40):
        got = threads.run_tasks([lambda j=j: work(j) for j in range(4)], 2)
        per_call.append((got[0][0], got[1][0]))  # tasks 0 and 2 are share 0, 1 and 3 share 1
    assert len(set(per_call)) == 1 and len(set(per_call[0])) == 2
    workers = {t.ident for t in pool_threads()}
    assert set(per_call[0]) <= workers
    held = [b for b in list(scratch_module._EVERY_SCRATCH) if b.data]
    assert len(held) == 2  # the two threads of the calls (this thread ran no task)


def test_an_evaluation_inside_an_evaluator_thread_runs_in_it():
    """A task of the evaluator's threads that evaluates with threads itself (a callable kernel
    that predicts, say) runs its tasks in its own thread: its shares would otherwise queue
    behind the tasks that wait for them."""
    import threading

    from attentive.evaluator import threads

    def outer(i):
        inner = threads.run_tasks([lambda k=k: (i, k, threading.get_ident()) for k in range(4)], 2)
        return inner, threading.get_ident()

    result = []
    caller = threading.Thread(
        target=lambda: result.append(
            threads.run_tasks([lambda i=i: outer(i) for i in range(6)], 3)
        ),
        daemon=True,
    )
    caller.start()
    caller.join(60)
    assert not caller.is_alive(), "nested evaluation deadlocked"
    for i, (inner, ident) in enumerate(result[0]):
        assert [(a, b) for a, b, _ in inner] == [(i, k) for k in range(4)]
        assert {c for _, _, c in inner} == {ident}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_process_evaluates_with_threads_of_its_own():
    """A child process has none of its parent's threads: its calls start threads of its own
    instead of queueing shares for threads that are not there (and waiting for ever)."""
    import time

    from attentive.evaluator import threads

    threads.run_tasks([lambda i=i: i for i in range(4)], 2)  # the parent's threads exist
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 when the threads' results come back right
        ok = threads.run_tasks([lambda i=i: i * i for i in range(6)], 3) == [0, 1, 4, 9, 16, 25]
        os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    if not done:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert done, "the forked process's threaded call did not return"
    assert os.waitstatus_to_exitcode(status) == 0


def test_release_scratch_while_threads_start_evaluating():
    """release_scratch() from one thread while others make their first set: the registry of
    every thread's set is changed under a lock (without it, iterating it raised RuntimeError)."""
    import sys
    import threading

    from attentive.evaluator import release_scratch
    from attentive.evaluator.scratch import scratch

    errors, done = [], threading.Event()
    hold = threading.Event()

    def holder():
        scratch()
        hold.wait()

    def releaser():
        while not done.is_set():
            try:
                release_scratch()
            except Exception as exc:  # any error is the failure looked for
                errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        holders = [threading.Thread(target=holder) for _ in range(200)]
        for t in holders:
            t.start()
        loop = threading.Thread(target=releaser)
        loop.start()
        for _ in range(60):
            starters = [threading.Thread(target=scratch) for _ in range(10)]
            for t in starters:
                t.start()
            for t in starters:
                t.join()
        done.set()
        loop.join()
        hold.set()
        for t in holders:
            t.join()
    finally:
        sys.setswitchinterval(interval)
        done.set()
        hold.set()
    assert errors == []


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_results_do_not_share_the_scratch_arrays(kernel):
    """The walks' blocks are kept between calls: nothing a call returned may change with the next
    call (a brute-force walk of the same rows is the reference)."""
    X, y = make_classification(n_samples=1500, n_features=100, random_state=4)
    walk = _walk(SVC(kernel=kernel, gamma="scale").fit(X[:400], y[:400]), X[:400], y[:400])
    pos = reference_statistics(walk, X[:400][y[:400] == 1])
    neg = reference_statistics(walk, X[:400][y[:400] == 0])
    boundary = curved_boundary(pos, 0.1, walk.theta_s(0.0), "both", upper_stats=neg)
    theta_s = walk.theta_s(0.0)
    first, second = X[400:950], X[950:]
    ref = apply_boundary(
        walk.partial_scores(first), boundary, theta_s, walk.offset, walk.terms.classes
    )
    assert 0 < ref.stopped.mean() < 1
    ev = evaluate_blocked(walk, first, boundary, theta_s, n_jobs=1, precision="double", path="walk")
    evaluate_blocked(walk, second, boundary, theta_s, n_jobs=1, precision="double", path="walk")
    np.testing.assert_array_equal(ev.n_evaluated, ref.n_evaluated)
    np.testing.assert_allclose(ev.decision, ref.decision, rtol=1e-9, atol=1e-9)
