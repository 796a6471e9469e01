"""Calibrated boundaries (SPEC §3): Clopper–Pearson bound, fixed-sequence scan, grid outcomes,
oracle, the estimator's ``calibrate`` and the coverage guarantee over many random splits."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from scipy.stats import binom
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.svm import SVC

from attentive import AttentiveClassifier, InvalidParameterError
from attentive.calibration import (
    CalibrationWarning,
    calibrate_auto,
    calibrate_scale,
    clopper_pearson_upper,
    fixed_sequence_scan,
    minimum_calibration_size,
)
from attentive.evaluation import apply_boundary, evaluation_options
from attentive.evaluator.sources.rbf import dense_term_ns
from attentive.evaluator.sources.sketch import sketch_cost_model
from attentive.families import family_names, make_family
from attentive.families.sketched import SketchedFamily, base_family, sketched_names
from attentive.grid import default_grid, family_ranking, grid_outcomes, oracle_stop_positions


@pytest.fixture(scope="module")
def problem():
    """An RBF SVM with a few hundred support vectors, fitted once, and a large pool of examples
    independent of its training data."""
    X, y = make_classification(
        n_samples=8400, n_features=10, n_informative=6, flip_y=0.03, random_state=3
    )
    clf = AttentiveClassifier(SVC(C=1.0), boundary="curved", side="both", random_state=0)
    clf.fit(X[:400], y[:400])
    S = clf.walk_.partial_scores(X[400:])
    return clf, X, y, S


@pytest.fixture(scope="module")
def masses(problem):
    """The running masses ``A_t`` of the pool's walks (what the mass-regression family needs)."""
    clf, X, _, S = problem
    A = clf.walk_.partial_masses(X[400:])
    assert A.shape == S.shape
    return A


@pytest.fixture(scope="module")
def sketched(problem):
    """The same classifier with a sketch of a fixed size (SPEC §3b; no choice of size to make:
    k = 2 principal directions of the 10 features, m = 16 landmarks, a sketch that leaves the
    walks something to do) and the pool's sketched walks, which start at the sketch's score."""
    clf0, X, y, _ = problem
    clf = AttentiveClassifier(
        SVC(C=1.0), boundary="curved", side="both", sketch=(2, 16), random_state=0
    ).fit(X[:400], y[:400])
    np.testing.assert_array_equal(clf.walk_.order, clf0.walk_.order)  # the same plain walk
    return clf, clf.sketched_walk_.partial_scores(X[400:])


def _family(clf, kind, side):
    return make_family(kind, clf.walk_statistics_, clf.theta_s_, side)


def _sketched_family(clf, name, side):
    stats = clf.sketched_statistics_
    return SketchedFamily(make_family(base_family(name), stats, clf.theta_s_, side))


# ----------------------------------------------------------------------------- the bound and scan


@pytest.mark.parametrize("m", [1, 7, 50, 300, 2000])
@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_clopper_pearson_upper_solves_the_binomial_tail(m, alpha):
    k = np.unique(np.linspace(0, m - 1, 6).astype(int))
    u = clopper_pearson_upper(k, m, alpha)
    # The exact upper bound U is the rate at which seeing ≤ k events has probability α.
    np.testing.assert_allclose(binom.cdf(k, m, u), alpha, rtol=1e-6)
    assert clopper_pearson_upper(m, m, alpha) == 1.0
    assert clopper_pearson_upper(0, m, alpha) == pytest.approx(1 - alpha ** (1 / m), rel=1e-9)


def test_minimum_calibration_size_is_where_zero_errors_first_pass():
    for delta, alpha in [(0.01, 0.05), (0.05, 0.1), (0.001, 0.01)]:
        m = minimum_calibration_size(delta, alpha)
        assert clopper_pearson_upper(0, m, alpha) <= delta < clopper_pearson_upper(0, m - 1, alpha)
    assert minimum_calibration_size(0.01, 0.05) == 299


def test_bad_alpha_and_counts_raise():
    with pytest.raises(InvalidParameterError, match="alpha"):
        clopper_pearson_upper(0, 10, 1.5)
    with pytest.raises(InvalidParameterError, match="counts"):
        clopper_pearson_upper(11, 10, 0.05)
    with pytest.raises(InvalidParameterError, match="positive integer"):
        clopper_pearson_upper(0, 0, 0.05)


def test_fixed_sequence_scan_stops_at_the_first_failure():
    rng = np.random.default_rng(0)
    for _ in range(200):
        u = rng.uniform(0, 0.1, size=rng.integers(1, 12))
        chosen, n_tested = fixed_sequence_scan(u, 0.05)
        # Brute force: walk the sequence by hand.
        expect, tested = None, 0
        for j, value in enumerate(u):
            tested += 1
            if value > 0.05:
                break
            expect = j
        assert (chosen, n_tested) == (expect, tested)


# ----------------------------------------------------------------------------- grid outcomes


@pytest.mark.parametrize("kind", family_names())
@pytest.mark.parametrize("side", ["lower", "upper", "both"])
def test_grid_outcomes_match_apply_boundary(problem, masses, kind, side):
    clf, _, _, S = problem
    S, A = S[:600], masses[:600]
    fam = _family(clf, kind, side)
    grid = default_grid()
    out = grid_outcomes(S, fam, grid, A=A)
    n_stopped = 0
    for j in range(0, grid.size, 7):
        ev = apply_boundary(S, fam.boundary(grid[j]), clf.theta_s_, A=A)
        np.testing.assert_array_equal(out.n_evaluated[:, j], ev.n_evaluated)
        np.testing.assert_array_equal(out.positive[:, j], ev.positive)
        n_stopped += ev.stopped.sum()
    assert n_stopped > 0  # the comparison covered stopping, not only full evaluation
    np.testing.assert_array_equal(out.full_positive, S[:, -1] >= clf.theta_s_)


def test_grid_outcomes_rejects_a_non_decreasing_grid(problem):
    clf, _, _, S = problem
    with pytest.raises(InvalidParameterError, match="decreasing"):
        grid_outcomes(S[:10], _family(clf, "curved", "both"), [1.0, 2.0])
    # a scale that is not a number is named as the grid's, not numpy's conversion alone
    for bad in ([3.0, "a"], [[2.0, 1.0], [0.5]]):
        with pytest.raises(InvalidParameterError, match=r"grid must be .* \(numbers\), got"):
            grid_outcomes(S[:10], _family(clf, "curved", "both"), bad)


def test_family_rejects_budget(problem):
    clf = problem[0]
    with pytest.raises(InvalidParameterError, match="family must be one of"):
        make_family("budget", clf.walk_statistics_, 0.0, "both")
    with pytest.raises(InvalidParameterError, match="no scale"):
        clf.boundary_family("budget")


def test_walk_grid_outcomes_in_chunks_equal_the_whole_matrix(problem, masses, monkeypatch):
    """Calibration walks a few rows at a time; the result equals the whole-matrix computation."""
    import attentive.walk as walk_module
    from attentive.grid import walk_grid_outcomes

    clf, X, _, S = problem
    fams = [_family(clf, k, "both") for k in family_names()]
    whole = [grid_outcomes(S[:500], f, A=masses[:500]) for f in fams]
    monkeypatch.setattr(walk_module, "_CHUNK_ELEMENTS", 37 * clf.n_terms_)  # 37-row chunks
    chunked = walk_grid_outcomes(clf.walk_, X[400:900], fams)
    for a, b in zip(whole, chunked, strict=True):
        np.testing.assert_array_equal(a.n_evaluated, b.n_evaluated)
        np.testing.assert_array_equal(a.positive, b.positive)
        np.testing.assert_array_equal(a.full_positive, b.full_positive)


def test_finite_population_family_is_the_sampling_estimate():
    """(n/t)·S_t against z standard errors of sampling n terms without replacement: the
    boundary, checked position by position against the formula written out independently."""
    X, y = make_classification(n_samples=900, n_features=8, random_state=1)
    clf = AttentiveClassifier(
        SVC(), boundary="finite-population", side="both", random_state=0, early_stopping=True
    )
    clf.fit(X[:600], y[:600])
    n, z = clf.n_terms_, 1.3
    b = clf.boundary_family("finite-population").boundary(z)
    for t in (1, 2, n // 2, n - 1, n):
        se = []
        for stats in (clf.class_stats_["positive"], clf.class_stats_["negative"]):
            sigma2 = stats.variance_terms / n  # mean over examples of the terms' variance
            se.append(n * np.sqrt(sigma2 * (n - t) / (t * (n - 1))))
        assert b.lower[t - 1] == pytest.approx(t / n * (clf.theta_s_ - z * se[0]), abs=1e-12)
        assert b.upper[t - 1] == pytest.approx(t / n * (clf.theta_s_ + z * se[1]), abs=1e-12)
    # A stopped walk scores c + (n/t)·S_t (then placed on its predicted side).
    S = clf.partial_scores(X[600:])
    with evaluation_options(precision="double"):  # S_t to the last bits, as partial_scores
        ev = clf.evaluate(X[600:])
    stopped = np.flatnonzero(ev.stopped)
    assert stopped.size > 10
    t = ev.n_evaluated[stopped]
    raw = clf.offset_ + n / t * S[stopped, t - 1]
    moved = np.where(ev.positive[stopped], np.maximum(raw, 0.0), np.minimum(raw, -1e-300))
    np.testing.assert_allclose(ev.decision[stopped], moved, rtol=1e-9, atol=1e-9)


def test_heteroscedastic_family_against_its_definition(problem):
    """The spread table from a brute-force grouping of the reference walks; the stop rule "some
    estimate at least as far out as this one is z spreads past θ_S" checked on a fine grid of
    estimates; and without a table the family is the regression family."""
    import dataclasses

    from attentive.families.heteroscedastic import BINS, SHRINK

    clf, X, _, S = problem
    fam = clf.boundary_family("heteroscedastic")
    reg = fam.regression
    table = clf.walk_statistics_.spread
    R = clf.walk_.partial_scores(X[:400])  # the reference set (fit data)
    assert table.n_reference == 400
    for t in (0, 7, 80, clf.n_terms_ - 2):
        est = reg.intercept[t] + reg.slope[t] * R[:, t]
        res2 = (R[:, -1] - est) ** 2
        ranked = np.argsort(est, kind="stable")
        for j, group in enumerate(np.array_split(ranked, BINS)):
            assert table.centers[t, j] == pytest.approx(est[group].mean(), rel=1e-9, abs=1e-12)
            spread = np.sqrt(
                (res2[group].sum() + SHRINK * reg.residual_std[t] ** 2) / (100 + SHRINK)
            )
            assert table.spreads[t, j] == pytest.approx(spread, rel=1e-9)
    theta = clf.theta_s_
    head = S[:300, :-1]
    for upper in (False, True):
        scores = fam.crossing_scores(head, upper)
        for t in (3, 40, clf.n_terms_ - 10):
            c, sp_ = table.centers[t], table.spreads[t]
            est = reg.intercept[t] + reg.slope[t] * head[:, t]
            span = np.concatenate([np.linspace(est.min() - 5, est.max() + 5, 4001), c])
            g = ((span - theta) if upper else (theta - span)) / np.interp(span, c, sp_)
            for z in (-0.5, 0.3, 1.0, 2.5):
                further = (
                    (span[None, :] <= est[:, None]) if upper else (span[None, :] >= est[:, None])
                )
                own = ((est - theta) if upper else (theta - est)) / np.interp(est, c, sp_)
                brute = np.maximum(np.where(further, g[None, :], -np.inf).max(axis=1), own) > z
                clear = np.abs(scores[:, t] - z) > 1e-6
                np.testing.assert_array_equal((scores[:, t] > z)[clear], brute[clear])
    # The boundary at z is where the estimate is exactly z spreads past θ_S (a root of
    # θ_S − e = z σ_t(e)), and it is the threshold of the crossing scores.
    z = 1.2
    b = fam.boundary(z)
    for t in (3, 40, clf.n_terms_ - 10):
        e = reg.intercept[t] + reg.slope[t] * b.lower[t]
        assert theta - e == pytest.approx(z * np.interp(e, table.centers[t], table.spreads[t]))
        near = np.array([[b.lower[t] - 1e-7], [b.lower[t] + 1e-7]])
        walk = np.zeros((2, t + 1))
        walk[:, t] = near[:, 0]
        lower = fam.crossing_scores(walk, upper=False)[:, t]
        assert lower[0] > z >= lower[1]
    plain = dataclasses.replace(clf.walk_statistics_, spread=None)
    as_regression = make_family("heteroscedastic", plain, theta, "both").boundary(z)
    reference = clf.boundary_family("regression").boundary(z)
    np.testing.assert_allclose(as_regression.lower[:-1], reference.lower[:-1], rtol=1e-12)
    np.testing.assert_allclose(as_regression.upper[:-1], reference.upper[:-1], rtol=1e-12)


@pytest.mark.parametrize("side", ["lower", "upper", "both"])
def test_heteroscedastic_tied_knots_stop_alike_in_calibration_and_evaluation(problem, side):
    """Knots at the same estimate (ties, as boosting's few distinct scores give) with different
    spreads: the grid's stops (crossing scores) and the deployed boundary's agree at every scale,
    also for walks whose estimate sits exactly on the tie."""
    import dataclasses

    from attentive.families.heteroscedastic import SpreadTable

    clf, _, _, S = problem
    reg = clf.boundary_family("regression").regression
    n = clf.n_terms_
    theta = clf.theta_s_
    centers = np.tile([theta - 1.0, theta - 0.2, theta - 0.2, theta + 0.5], (n, 1))
    spreads = np.tile([0.3, 0.05, 0.7, 0.4], (n, 1))  # g at the tie: 4 and 0.2857, off the grid
    stats = dataclasses.replace(
        clf.walk_statistics_, spread=SpreadTable(centers, spreads, n_reference=1)
    )
    fam = make_family("heteroscedastic", stats, theta, side)
    # Walks whose estimate is exactly on the tie at some positions.
    W = S[:300].copy()
    ok = reg.slope[:-1] > 0
    tie = (theta - 0.2 - reg.intercept[:-1]) / np.where(ok, reg.slope[:-1], 1.0)
    W[:100, :-1] = np.where(ok, tie, W[:100, :-1])
    grid = default_grid()
    out = grid_outcomes(W, fam, grid)
    stopped = 0
    for j in range(grid.size):
        ev = apply_boundary(W, fam.boundary(grid[j]), theta)
        np.testing.assert_array_equal(out.n_evaluated[:, j], ev.n_evaluated)
        np.testing.assert_array_equal(out.positive[:, j], ev.positive)
        stopped += ev.stopped[:100].sum()
    assert stopped > 0


# ----------------------------------------------------------------------------- oracle


def test_oracle_stop_positions_against_a_loop():
    rng = np.random.default_rng(1)
    S = np.cumsum(rng.normal(size=(300, 25)), axis=1)
    M = np.append(rng.normal(size=24), 0.0)
    theta = 0.3
    got = oracle_stop_positions(S, theta, M)
    for i in range(S.shape[0]):
        final = S[i, -1] >= theta
        last = 0
        for t in range(1, 26):
            if (S[i, t - 1] + M[t - 1] >= theta) != final:
                last = t
        assert got[i] == min(last + 1, 25)
    assert got.min() >= 1 and got.max() <= 25


def test_oracle_is_a_floor_for_the_curved_family(problem):
    """The oracle evaluates less on average than any scale of the curved family (with the same
    ``M_t``) that makes no mistake on the same examples."""
    import dataclasses

    clf, _, _, S = problem
    # Both sides with the pooled M_t, D_t: the same M_t as the oracle's running estimate.
    pooled = clf.walk_statistics_.pooled
    stats = dataclasses.replace(clf.walk_statistics_, positive=pooled, negative=pooled)
    out = grid_outcomes(S, make_family("curved", stats, clf.theta_s_, "both"))
    oracle = oracle_stop_positions(S, clf.theta_s_, clf.reference_stats_.remainder_mean)
    exact = out.disagreement_counts() == 0
    assert exact.any()
    assert oracle.mean() / clf.n_terms_ <= out.evaluated_fractions()[exact].min()


# ----------------------------------------------------------------------------- the guarantee


_GUARANTEE_KINDS = [
    ("curved", "lower"),
    ("curved", "both"),
    ("regression", "both"),
    ("finite-population", "both"),
    ("heteroscedastic", "both"),
    ("mass-regression", "both"),
    ("constant", "both"),
    ("auto", "both"),
    ("auto", "lower"),
    ("auto-reference", "both"),
    ("sketched-curved", "lower"),
    ("sketched-curved", "both"),
    ("sketched-regression", "both"),
    ("sketched-heteroscedastic", "both"),
    ("sketched-mass-regression", "both"),
    ("auto-sketched", "both"),
    ("auto-reference-sketched", "both"),
]


@pytest.mark.parametrize(
    ("kind", "side", "point"),
    [
        *((kind, side, "delta3-alpha10") for kind, side in _GUARANTEE_KINDS),
        # The operating point of issue 35's target (coverage ≥ 95 %), for the sketched rules.
        *(
            pytest.param(kind, side, "delta1-alpha5", marks=pytest.mark.slow)
            for kind, side in _GUARANTEE_KINDS
            if "sketched" in kind and side == "both"
        ),
    ],
)
def test_calibration_guarantee_holds_over_random_splits(
    problem, masses, sketched, kind, side, point
):
    """Repeat calibration on 300 random calibration/test splits: the test disagreement of the
    chosen scale exceeds δ in at most α of them (plus 3 binomial standard errors). ``auto``
    chooses the family on each split, after seeing the calibration data; ``-sketched``: among
    the plain and the sketched rules (their walks start at the sketch's score, SPEC §3b).

    At δ = 1 %, α = 5 % (600 calibration examples; the sketched rules only) the coverage — the
    share of splits whose test disagreement is ≤ δ — must be ≥ 95 % as measured here, without
    the binomial allowance (it is 97–99 % on these seeded splits)."""
    clf, _, _, S = problem
    sketched_clf, S_sketched = sketched
    delta, alpha, m_cal = (0.03, 0.1, 300) if point == "delta3-alpha10" else (0.01, 0.05, 600)
    n_splits = 300
    if kind.startswith("auto"):
        names = (*family_names(), *(sketched_names() if kind.endswith("sketched") else ()))
    else:
        names = (kind,)
    outs = {
        name: grid_outcomes(S_sketched, _sketched_family(sketched_clf, name, side), A=masses)
        if name.startswith("sketched-")
        else grid_outcomes(S, _family(clf, name, side), A=masses)
        for name in names
    }
    # (Each family's disagreements and evaluated fractions over the pool, taken once: the
    # naive scan below reads them on every split.)
    disagree = {name: out.disagree for name, out in outs.items()}
    fractions = {name: out.evaluated_fractions() for name, out in outs.items()}
    pool = S.shape[0]
    rng = np.random.default_rng(7)
    violations = naive_violations = chosen_any = 0
    for _ in range(n_splits):
        perm = rng.permutation(pool)
        cal, test = perm[:m_cal], perm[m_cal:]
        if kind.startswith("auto"):
            subsets = {name: out.subset(cal) for name, out in outs.items()}
            # auto: Bonferroni over the families; auto-reference: the estimator's ranking on its
            # reference set (independent of every split), the first family at the full α; with
            # sketched rules, ranked at their cost (the sketch and the walked terms').
            ranking = None
            if kind == "auto-reference":
                ranking = family_ranking(clf.reference_profile_, delta, (m_cal, alpha))
            elif kind == "auto-reference-sketched":
                ranking = family_ranking(sketched_clf._profile_costs(), delta, (m_cal, alpha))
            report = calibrate_auto(subsets, delta=delta, alpha=alpha, side=side, ranking=ranking)
        else:
            report = calibrate_scale(
                outs[kind].subset(cal), delta=delta, alpha=alpha, family=kind, side=side
            )
        j = report.chosen_index
        test_rate = 0.0 if j is None else disagree[report.family][test, j].mean()
        violations += test_rate > delta
        chosen_any += j is not None
        # Without the confidence bound (empirical rate ≤ δ, the cheapest family) the same scan
        # is not safe.
        naive = []
        for name, D in disagree.items():
            rates = D[cal].mean(axis=0)
            naive_j = np.flatnonzero(rates > delta)[0] - 1
            naive.append((fractions[name][naive_j], name, naive_j))
        _, name, naive_j = min(naive, key=lambda item: item[0])
        naive_violations += disagree[name][test, naive_j].mean() > delta
    slack = 3 * np.sqrt(alpha * (1 - alpha) / n_splits)
    assert chosen_any == n_splits  # the problem lets calibration choose a scale every time
    assert violations / n_splits <= alpha + slack
    if point == "delta1-alpha5":
        assert 1 - violations / n_splits >= 1 - alpha
    # The test can fail: the uncorrected scan breaks the same bound.
    assert naive_violations / n_splits > alpha + slack


# ----------------------------------------------------------------------------- report


def test_report_table_and_guarantee(problem):
    clf, _, _, S = problem
    out = grid_outcomes(S[:1000], _family(clf, "curved", "both"))
    rep = calibrate_scale(out, delta=0.02, alpha=0.05, side="both")
    frame = rep.to_frame()
    j = rep.chosen_index
    assert list(frame.columns) == [
        "z",
        "nominal_delta",
        "k",
        "disagreement",
        "upper_bound",
        "evaluated_fraction",
        "status",
        "chosen",
    ]
    assert frame["chosen"].sum() == 1 and frame["chosen"].to_numpy()[j]
    assert (frame["status"][: j + 1] == "passed").all()
    assert frame["status"][j + 1] == "failed" and frame["upper_bound"][j + 1] > 0.02
    assert (frame["status"][j + 2 :] == "not tested").all()
    np.testing.assert_array_equal(frame["k"], out.disagree.sum(axis=0))
    assert "Disagreement ≤ δ with probability ≥ 1 − α" in rep.guarantee
    assert "1000 calibration examples" in rep.guarantee and "2%" in rep.guarantee


# ----------------------------------------------------------------------------- the estimator


def test_calibrate_uses_the_chosen_boundary(problem):
    clf0, X, y, S = problem
    clf = clone(clf0).fit(X[:400], y[:400])
    X_cal, X_test = X[400:1400], X[1400:2400]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        clf.calibrate(X_cal, delta=0.02, alpha=0.05)
    rep = clf.calibration_
    assert rep.m == 1000 and not rep.fallback and clf.boundary_.kind == "calibrated"
    # Predictions are the chosen member of the family applied to the walks.
    expect = apply_boundary(
        S[1000:2000], clf.boundary_family().boundary(rep.chosen_scale), clf.theta_s_
    )
    ev = clf.set_params(early_stopping=True).evaluate(X_test)  # the rule's walk ("auto" may not)
    np.testing.assert_array_equal(ev.n_evaluated, expect.n_evaluated)
    np.testing.assert_array_equal(ev.positive, expect.positive)
    assert ev.stopped.any()


def test_calibrated_boundary_holds_out_part_of_fit_data():
    X, y = make_classification(n_samples=1500, n_features=8, flip_y=0.03, random_state=0)
    clf = AttentiveClassifier(
        SVC(), boundary="calibrated", side="both", delta=0.02, random_state=0, calibration_size=0.3
    )
    clf.fit(X[:1000], y[:1000])
    assert clf.side_ == "both"
    assert clf.calibration_.m == 300
    rep = clf.calibration_
    # family="auto": the families ranked on the reference set, the cheapest calibrated at α;
    # with them the sketched rules of the sketch fit kept (8 features, two of them informative:
    # four principal directions sketch the kernel well), each at its cost.
    assert rep.side == "both" and rep.family == rep.ranking[0]
    assert clf.sketched_walk_ is not None
    assert sorted(rep.ranking) == sorted((*family_names(), *sketched_names()))
    cost, term_cost = sketch_cost_model(clf.n_terms_)(clf.sketched_walk_.sketch)
    # Each family judged where a scan of the 300 held-out examples would stop if they disagreed
    # at the reference profile's rates (grid.profile_point; here a loop over scipy's quantiles).
    from scipy.stats import beta

    # At the measured costs a rule on the running mass also pays its second sum per term.
    d = clf.sketched_walk_.sketch.n_features
    mass = 1.0 / dense_term_ns(d, True) if clf.sketch_costs_ == "measured" else 0.0
    cheapest = {}
    for name, (r, f) in clf.reference_profile_.items():
        costs = cost + f * term_cost if name.startswith("sketched-") else f
        if name.endswith("mass-regression"):
            costs = costs + f * mass
        last = None
        for j, rate in enumerate(r):
            k = round(rate * 300)
            if (1.0 if k >= 300 else beta.ppf(0.95, k + 1, 300 - k)) > 0.02:
                break
            last = j
        if last is not None:
            cheapest[name] = costs[last]
    assert cheapest[rep.family] == min(cheapest.values())
    assert rep.scan_alpha is None and rep.level == 0.05
    assert clf.boundary_.params["family"] == rep.family
    assert "calibration set played no part in the choice" in rep.guarantee
    n_ref = clf.class_stats_["positive"].n_reference + clf.class_stats_["negative"].n_reference
    assert n_ref == 700
    # The model was fitted on the 700 fit examples only: fitting an SVC on the same stratified
    # split here reproduces its decision function exactly.
    from sklearn.model_selection import train_test_split

    X_fit, _, y_fit, _ = train_test_split(
        X[:1000], y[:1000], test_size=0.3, stratify=y[:1000], random_state=0
    )
    again = SVC().fit(X_fit, y_fit)
    np.testing.assert_allclose(
        clf.estimator_.decision_function(X[1000:]), again.decision_function(X[1000:]), rtol=1e-9
    )
    # ... and its reference statistics come from those 700 too: the mean remainder at t = 1 over
    # the positives, recomputed from the walks of exactly those examples (each without its own
    # support vector: boundary="calibrated" walks the reference set leave-one-out).
    assert clf.reference_walks_ == "leave-one-out"
    S = clf.walk_.partial_scores(X_fit[y_fit == 1], leave_own_out=True)
    assert clf.class_stats_["positive"].remainder_mean[0] == pytest.approx(
        (S[:, -1] - S[:, 0]).mean(), rel=1e-9
    )
    full = clf.estimator_.decision_function(X[1000:]) >= 0
    ev = clf.evaluate(X[1000:])
    assert np.mean(ev.positive != full) <= 0.05


def test_calibration_examples_needed_and_the_auto_size():
    from attentive.calibration import calibration_examples_needed

    for k in (0, 1, 3):
        m = calibration_examples_needed(0.01, 0.05, disagreements=k)
        assert clopper_pearson_upper(k, m, 0.05) <= 0.01 < clopper_pearson_upper(k, m - 1, 0.05)
    assert calibration_examples_needed(0.01, 0.05) == 299
    # "auto": 30 % of the examples, raised up to 40 % to tolerate one disagreement at (δ, α).
    clf = AttentiveClassifier(SVC(), boundary="calibrated", delta=0.01)
    assert clf._calibration_examples(1000) == 400  # needs 473, capped at 40 %
    assert clf._calibration_examples(1251) == 473
    assert clf._calibration_examples(2000) == 600  # 30 % is already more


def test_no_scale_passing_falls_back_to_full_evaluation():
    X, y = make_classification(n_samples=600, n_features=8, random_state=0)
    clf = AttentiveClassifier(
        SVC(), boundary="calibrated", delta=0.01, random_state=0, calibration_size=0.3
    )
    with pytest.warns(CalibrationWarning, match="at least 299 are needed"):
        clf.fit(X[:400], y[:400])  # 120 calibration examples
    assert clf.calibration_.fallback and clf.boundary_.kind == "full"
    ev = clf.evaluate(X[400:])
    assert not ev.stopped.any()
    np.testing.assert_array_equal(ev.positive, clf.estimator_.decision_function(X[400:]) >= 0)
    assert "every term is evaluated" in clf.calibration_.guarantee


def test_calibrate_parameter_errors(problem):
    clf, X, y, _ = problem
    with pytest.raises(NotFittedError):
        AttentiveClassifier(SVC()).calibrate(X[:10])
    budget = AttentiveClassifier(SVC(), boundary="budget").fit(X[:200], y[:200])
    with pytest.raises(InvalidParameterError, match="no scale to calibrate"):
        budget.calibrate(X[200:600])
    with pytest.raises(InvalidParameterError, match="family must be 'auto' or one of"):
        AttentiveClassifier(SVC(), boundary="calibrated", family="nope").fit(X[:200], y[:200])
    with pytest.raises(InvalidParameterError, match="alpha"):
        clf.calibrate(X[:400], alpha=0)
    with pytest.raises(InvalidParameterError, match="calibration_size"):
        AttentiveClassifier(SVC(), boundary="calibrated", calibration_size=1.5).fit(
            X[:200], y[:200]
        )
    with pytest.raises(InvalidParameterError, match="calibration_size"):
        AttentiveClassifier(SVC(), boundary="calibrated", calibration_size=1).fit(X[:200], y[:200])
    params = AttentiveClassifier(SVC()).get_params()
    assert (
        params["alpha"] == 0.05
        and params["calibration_size"] == "auto"
        and params["side"] == "lower"
    )


def test_regression_statistics_match_least_squares(problem):
    clf, X, _, _ = problem
    reg = clf.boundary_family("regression").regression
    S = clf.walk_.partial_scores(X[:400])
    for t in (0, 5, 60, clf.n_terms_ - 2):
        b, a = np.polyfit(S[:, t], S[:, -1], 1)
        resid = S[:, -1] - (a + b * S[:, t])
        assert reg.slope[t] == pytest.approx(b, rel=1e-8)
        assert reg.intercept[t] == pytest.approx(a, rel=1e-8, abs=1e-10)
        assert reg.residual_std[t] == pytest.approx(resid.std(), rel=1e-6)
    assert (reg.slope[-1], reg.intercept[-1], reg.residual_std[-1]) == (1.0, 0.0, 0.0)
    # At the boundary the estimate a_t + b_t · S_t is exactly θ_S − z σ_t; a stopped walk's
    # score is its own estimate a_t + b_t S_t.
    b = clf.boundary_family("regression").boundary(1.5)
    ok = np.isfinite(b.lower)
    np.testing.assert_allclose(
        (reg.intercept + reg.slope * b.lower)[ok],
        (clf.theta_s_ - 1.5 * reg.residual_std)[ok],
        atol=1e-9,
    )
    at = np.flatnonzero(ok)[:5]
    est = b.stop_estimate(at, np.full(at.size, -1), S[:5, 0][: at.size])
    np.testing.assert_allclose(est, reg.intercept[at] + reg.slope[at] * S[:5, 0][: at.size])


@pytest.mark.parametrize("delta", [0.05, 0.01])
def test_a_rule_that_decides_the_rarer_decision_the_other_way_is_warned_of(delta, tmp_path):
    """With 4 % of the full model's decisions on one side, δ = 5 % is met by a rule that decides
    most of them the other way (a helper's trial: 4 of 54 kept on its test rows, every walk
    stopped after one term). The guarantee holds, so fit warns, from the calibration examples:
    counted here again from the rule's walk on the rows fit held out (``early_stopping=True``:
    ``predict`` may give some of them every term, path "triage", and keep more)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from attentive.calibration import CalibrationWarning
    from attentive.estimator import calibration_split

    X, y = make_classification(
        3000, 20, n_informative=8, weights=[0.95], random_state=0, flip_y=0.01
    )
    y = np.where(y == 1, "rare", "common")[:2000]
    X = X[:2000]
    clf = AttentiveClassifier(
        make_pipeline(StandardScaler(), SVC(class_weight="balanced")),
        boundary="calibrated",
        side="both",
        delta=delta,
        random_state=0,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y)
    _, X_cal, _, _ = calibration_split(X, y, delta=delta, random_state=0)
    full = clf.estimator_.predict(X_cal)
    assert np.mean(full == "rare") < 0.5
    walked = copy.copy(clf).set_params(early_stopping=True)  # (the same fitted rule)
    kept = np.mean(walked.predict(X_cal)[full == "rare"] == "rare")
    rare_warnings = [
        w
        for w in caught
        if issubclass(w.category, CalibrationWarning) and "rarer" in str(w.message)
    ]
    assert clf.calibration_.chosen_index is not None
    assert bool(rare_warnings) == (kept < 0.5), (kept, [str(w.message) for w in caught])
    if rare_warnings:
        assert f"only {kept:.0%} of the {int((full == 'rare').sum())}" in str(
            rare_warnings[0].message
        )
        assert "'rare'" in str(rare_warnings[0].message)
        # kept on the report too, for those who do not see warnings (the dashboard shows it)
        (note,) = clf.calibration_.notes
        assert note.endswith("share.") and "boundary=" not in note
        assert str(rare_warnings[0].message).startswith(note[:-1] + ", or evaluate in full")
        # and a saved model keeps it (skops, the trusted types)
        from attentive.models.persistence import load_model, save_model

        path = save_model(clf, tmp_path / "rare.skops")
        assert load_model(path).calibration_.notes == (note,)
    else:
        assert delta == 0.01  # (the case that does not warn: the rare decisions are kept)
        assert clf.calibration_.notes == ()


def test_too_few_rare_decisions_to_judge_say_nothing():
    """Fewer than RARE_MIN calibration examples of the rarer decision: their share is not
    judged (one example is 0 % or 100 %: a review found the warning on a single example)."""
    from attentive.estimator import RARE_MIN

    X, y = make_classification(1200, 10, n_informative=5, random_state=3)
    clf = AttentiveClassifier(SVC(), boundary="curved", side="both", random_state=0)
    clf.fit(X[:600], y[:600])
    full = clf.with_rule("full").predict(X[600:])
    rare = full == 1
    for count, warns in ((RARE_MIN - 1, False), (40, None)):
        rows = np.r_[np.flatnonzero(~rare), np.flatnonzero(rare)[:count]]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            clf.calibrate(X[600:][rows], delta=0.3, family="curved")
        said = any("rarer decision" in str(w.message) for w in caught)
        if warns is False:
            assert not said, [str(w.message) for w in caught]
        else:  # as many as that: judged (δ = 0.3 leaves room to drop most of them)
            kept = np.mean(clf.predict(X[600:][rows])[-count:] == 1)
            assert said == (kept < 0.5 and clf.calibration_.chosen_index is not None), kept
