"""Shared input checks: feature names of every model's data class."""

import numpy as np
import pytest

from aidopt.exceptions import DataError
from aidopt.models.lad import LADData
from aidopt.models.pu import PUData
from aidopt.models.s3vm import S3VMData
from aidopt.models.svm import SVMData

X = np.arange(12.0).reshape(4, 3)
DATA = [
    (LADData, np.arange(4.0)),
    (SVMData, np.array([1, -1, 1, -1])),
    (S3VMData, np.array([1.0, -1.0, np.nan, np.nan])),
    (PUData, np.array([1, 0, 0, 1])),
]


@pytest.mark.parametrize(("cls", "target"), DATA)
def test_default_and_given_feature_names(cls, target):
    assert cls.from_arrays(X, target).feature_names == ("x1", "x2", "x3")
    given = cls.from_arrays(X, target, feature_names=["a", "b", "c"])
    assert given.feature_names == ("a", "b", "c")


@pytest.mark.parametrize(("cls", "target"), DATA)
def test_wrong_number_of_feature_names_is_named(cls, target):
    with pytest.raises(DataError, match="X has 3 columns but 2 feature names"):
        cls.from_arrays(X, target, feature_names=["a", "b"])
