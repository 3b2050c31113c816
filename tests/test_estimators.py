"""scikit-learn facades behave like estimators and give the certified AID fit."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import QuantileRegressor

from aidopt.data.lad import make_lad
from aidopt.estimators import AIDLADRegressor
from aidopt.exceptions import DataError, InvalidParameterError


@pytest.mark.parametrize("solver", ["fn", "highs"])
def test_lad_regressor_matches_sklearn_quantile_regression(solver):
    X, y, _, _ = make_lad(1500, 3, seed=11)
    est = AIDLADRegressor(solver=solver, tol=0.0).fit(X, y)
    ref = QuantileRegressor(quantile=0.5, alpha=0.0, solver="highs").fit(X, y)
    assert est.status_ == "optimal"
    ours = np.abs(y - est.predict(X)).sum()
    theirs = np.abs(y - ref.predict(X)).sum()
    assert ours == pytest.approx(theirs, rel=1e-7)
    assert list(est.history_.columns)[:3] == ["iteration", "clusters", "rate"]
    assert est.n_iter_ == len(est.history_)


def test_estimator_protocol():
    est = AIDLADRegressor(fit_intercept=False, tol=1e-3)
    twin = clone(est)
    assert twin.get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        est.predict(np.ones((2, 3)))
    frame = pd.DataFrame(np.random.default_rng(0).standard_normal((300, 2)), columns=["a", "b"])
    fitted = est.fit(frame, frame["a"] * 2 + 1)
    assert list(fitted.feature_names_in_) == ["a", "b"]
    assert fitted.intercept_ == 0.0
    with pytest.raises(DataError, match="fitted with 2 features"):
        fitted.predict(np.ones((2, 3)))
    with pytest.raises(InvalidParameterError, match="'tol'"):
        AIDLADRegressor(tol=-1.0).fit(frame, frame["a"])
