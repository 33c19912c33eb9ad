#!/usr/bin/python3
"""Reference values for hal's statistics (src/evidence), computed once with SciPy and kept as
tests/evidence/statistics_fixtures.json. Run again with /usr/bin/python3 (SciPy: Debian's
python3-scipy) to regenerate: the samples come from a seeded NumPy generator, so the file only
changes when SciPy's answers do.

Each case holds two samples of times (a, b) and what SciPy says of them:
- welch: scipy.stats.ttest_ind(log b, log a, equal_var=False), and the 95 % interval of
  mean(log b) - mean(log a) from Welch's standard error and Student's t quantile;
- mann_whitney: scipy.stats.mannwhitneyu(a, b, method="asymptotic", use_continuity=True):
  the U of a, two-sided p (normal approximation, tie-corrected variance);
- hedges_g of the log times (b - a over the pooled SD, times 1 - 3 / (4 (na + nb) - 9));
- bootstrap: scipy.stats.bootstrap's percentile interval of median(b) / median(a), 20 000
  resamples: a Monte Carlo figure that hal's own bootstrap (another generator) must come near.
Power cases: the smallest n per side at which a two-sided two-sample t-test at `alpha` has
`power` for a standardised effect d (scipy.stats.nct: noncentral t, df 2n - 2, nc d sqrt(n/2)).
"""
import json
import pathlib

import numpy as np
from scipy import stats


def welch(a, b):
    la, lb = np.log(a), np.log(b)
    result = stats.ttest_ind(lb, la, equal_var=False)
    va, vb = la.var(ddof=1) / len(la), lb.var(ddof=1) / len(lb)
    se = np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1))
    diff = lb.mean() - la.mean()
    q = stats.t.ppf(0.975, df)
    return {"t": float(result.statistic), "df": float(df), "p_value": float(result.pvalue),
            "difference": float(diff), "ci95": [float(diff - q * se), float(diff + q * se)]}


def hedges_g(a, b):
    la, lb = np.log(a), np.log(b)
    na, nb = len(la), len(lb)
    pooled = np.sqrt(((na - 1) * la.var(ddof=1) + (nb - 1) * lb.var(ddof=1)) / (na + nb - 2))
    return float((lb.mean() - la.mean()) / pooled * (1 - 3 / (4 * (na + nb) - 9)))


def median_ratio_interval(a, b, seed):
    def ratio(x, y, axis=-1):
        return np.median(y, axis=axis) / np.median(x, axis=axis)
    result = stats.bootstrap((a, b), ratio, vectorized=True, paired=False, n_resamples=20000,
                             confidence_level=0.95, method="percentile", random_state=seed)
    return [float(result.confidence_interval.low), float(result.confidence_interval.high)]


def power(d, n, alpha):
    df = 2 * n - 2
    crit = stats.t.ppf(1 - alpha / 2, df)
    nc = d * np.sqrt(n / 2)
    return float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))


def samples_for_power(d, alpha, target):
    n = 2
    while power(d, n, alpha) < target:
        n += 1
    return n


def main():
    rng = np.random.default_rng(20261124)
    cases = []

    def add(name, a, b):
        a, b = np.asarray(a, float), np.asarray(b, float)
        u = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic",
                               use_continuity=True)
        cases.append({"name": name, "a": a.tolist(), "b": b.tolist(), "welch": welch(a, b),
                      "mann_whitney": {"u": float(u.statistic), "p_value": float(u.pvalue)},
                      "hedges_g": hedges_g(a, b),
                      "bootstrap_ci95": median_ratio_interval(a, b, len(cases) + 1)})

    add("same_distribution", rng.lognormal(np.log(5e-3), 0.05, 30),
        rng.lognormal(np.log(5e-3), 0.05, 30))
    add("b_slower_10pct", rng.lognormal(np.log(2e-2), 0.03, 40),
        rng.lognormal(np.log(2.2e-2), 0.03, 40))
    add("b_faster_23pct_unequal", rng.lognormal(np.log(1e-3), 0.02, 25),
        rng.lognormal(np.log(0.77e-3), 0.08, 60))
    # Timer resolution makes ties: times rounded to 10 us.
    add("ties", np.round(rng.lognormal(np.log(1e-3), 0.05, 50), 5),
        np.round(rng.lognormal(np.log(1.01e-3), 0.05, 45), 5))
    add("heavy_tail", np.concatenate([rng.lognormal(np.log(3e-3), 0.02, 45), [9e-3, 1.2e-2]]),
        rng.lognormal(np.log(3.1e-3), 0.02, 47))
    add("tiny", [1.0, 1.2, 0.9, 1.1, 1.05], [1.3, 1.25, 1.4, 1.2, 1.35, 1.5])

    power_cases = []
    for d, alpha, target in [(0.5, 0.05, 0.8), (0.2, 0.05, 0.8), (1.0, 0.01, 0.9),
                             (0.3, 0.0125, 0.8), (2.0, 0.05, 0.8)]:
        n = samples_for_power(d, alpha, target)
        power_cases.append({"d": d, "alpha": alpha, "power": target, "n": n,
                            "power_at_n": power(d, n, alpha)})

    out = pathlib.Path(__file__).resolve().parent.parent / "tests/evidence/statistics_fixtures.json"
    out.write_text(json.dumps({"scipy": __import__("scipy").__version__, "cases": cases,
                               "power": power_cases}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
