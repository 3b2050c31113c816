"""The shipped teaching instances solve, and AID agrees with the full model on them."""

import json
from pathlib import Path

import pytest

from aidopt.cli import main

INSTANCES = Path(__file__).parents[1] / "instances"


def solve_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_lad_small_aid_equals_full_lp(capsys):
    argv = ["solve", "lad", "--data", str(INSTANCES / "lad_small.csv"), "--target", "y"]
    aid = solve_json(capsys, [*argv, "--tol", "0", "--json"])
    full = solve_json(capsys, [*argv, "--full", "--json"])
    assert aid["status"] == "optimal"
    assert aid["objective"] == pytest.approx(full["objective"], rel=1e-9)
    assert aid["lower_bound"] == pytest.approx(aid["objective"], rel=1e-9)
