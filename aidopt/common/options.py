"""Declared options: a model states each of its parameters once, everything else is generated.

An :class:`Option` holds a parameter's name, default, domain and one line of help (with the
paper's symbol). From a model's tuple of options aidopt generates

* the model's constructor (keyword arguments in declared order, values stored as given — the
  scikit-learn convention — and validated by :meth:`AggregatedModel.check_params`),
* the command-line flags of ``aidopt solve MODEL`` (:func:`add_to_parser`, :func:`from_args`),
* the scikit-learn estimators' parameters (:mod:`aidopt.estimators`),
* the options tables of the documentation (:func:`markdown_table`, ``aidopt models``).

Validation messages follow scikit-learn: "The 'M' parameter of SVMModel must be a float in the
range (0.0, inf). Got -1 instead." (after Pyomo's ``ConfigValue`` and scikit-learn's
``_parameter_constraints``).
"""

from __future__ import annotations

import argparse
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

from aidopt.exceptions import InvalidParameterError

__all__ = [
    "Option",
    "add_to_parser",
    "from_args",
    "keyword_init",
    "markdown_table",
    "parse_seed",
    "validate",
]

_MISSING = object()


@dataclass(frozen=True)
class Option:
    """One declared parameter.

    ``kind``: ``float``, ``int``, ``bool``, ``str`` or a class (checked with isinstance);
    ``low``/``high``/``closed``: the interval of a number (``closed`` ∈ neither, left, right,
    both); ``choices``: the allowed values; ``allow_none``: None is allowed too.
    ``required``: no default (the constructor and the command line need a value).
    Command line: ``flag`` (default ``--name`` with dashes), ``negate`` (a flag that sets a
    True-by-default bool to False, e.g. ``--no-intercept``), ``cli_values`` (command-line
    spellings of values, e.g. ``{"none": None}``), ``cli`` False to keep it off the command line,
    ``convert`` (a function of the parsed namespace giving the value, for composite options).
    """

    name: str
    default: Any = _MISSING
    help: str = ""
    kind: type | tuple[type, ...] = float
    low: float | None = None
    high: float | None = None
    closed: str = "neither"
    choices: tuple[Any, ...] | None = None
    allow_none: bool = False
    flag: str | None = None
    negate: str | None = None
    cli_values: dict[str, Any] = field(default_factory=dict)
    cli: bool = True
    convert: Callable[[argparse.Namespace], Any] | None = None
    metavar: str | None = None
    parse: Callable[[str], Any] | None = None  # argparse ``type`` (default: from ``kind``)

    @property
    def required(self) -> bool:
        return self.default is _MISSING

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def dest(self) -> str:
        return "opt_" + self.name

    # ------------------------------------------------------------------ validation
    def domain(self) -> str:
        """The domain in scikit-learn's words: "a float in the range (0.0, inf)"."""
        if self.choices is not None:
            shown = ", ".join(repr(c) for c in self.choices)
            text = f"one of {{{shown}}}"
        elif self.kind is bool:
            text = "a bool"
        elif self.kind in (int, float):
            word = "an int" if self.kind is int else "a float"
            left = "[" if self.closed in ("left", "both") else "("
            right = "]" if self.closed in ("right", "both") else ")"
            lo = "-inf" if self.low is None else repr(self.kind(self.low))
            hi = "inf" if self.high is None else repr(self.kind(self.high))
            if self.kind is int:
                left, right = "[", "]"
            text = f"{word} in the range {left}{lo}, {hi}{right}"
        elif isinstance(self.kind, tuple):
            text = "an instance of " + " or ".join(f"'{k.__name__}'" for k in self.kind)
        else:
            module = "" if self.kind.__module__ == "builtins" else f"{self.kind.__module__}."
            text = f"an instance of '{module}{self.kind.__name__}'"
        return text + (" or None" if self.allow_none else "")

    def check(self, value: Any, owner: str) -> Any:
        """The value if it is in the domain, else InvalidParameterError (scikit-learn's words)."""
        if value is None and self.allow_none:
            return value
        if not self._ok(value):
            raise InvalidParameterError(
                f"The '{self.name}' parameter of {owner} must be {self.domain()}. "
                f"Got {value!r} instead."
            )
        return value

    def _ok(self, value: Any) -> bool:
        if self.choices is not None:
            return any(value == c and type(value) is type(c) for c in self.choices) or (
                value in self.choices and not isinstance(value, bool)
            )
        if self.kind is bool:
            return isinstance(value, bool) or type(value).__name__ == "bool_"
        if self.kind is int:
            ok = isinstance(value, Integral) and not isinstance(value, bool)
        elif self.kind is float:
            ok = isinstance(value, Real) and not isinstance(value, bool)
            ok = ok and math.isfinite(float(value))
        else:
            return isinstance(value, self.kind)
        if not ok:
            return False
        v = float(value)
        lo_ok = self.low is None or (
            v >= self.low if self.closed in ("left", "both") else v > self.low
        )
        hi_ok = self.high is None or (
            v <= self.high if self.closed in ("right", "both") else v < self.high
        )
        if self.kind is int:
            lo_ok = self.low is None or v >= self.low
            hi_ok = self.high is None or v <= self.high
        return lo_ok and hi_ok

    # ------------------------------------------------------------------ command line
    def add_to(self, parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
        if not self.cli:
            return
        if self.kind is bool:
            if self.negate is not None:
                parser.add_argument(
                    self.negate, dest=self.dest, action="store_false", help=self.help
                )
                parser.set_defaults(**{self.dest: self.default})
            else:
                parser.add_argument(
                    self.cli_flag,
                    dest=self.dest,
                    action="store_true",
                    default=self.default if not self.required else False,
                    help=self.help,
                )
            return
        kwargs: dict[str, Any] = {"dest": self.dest, "help": self._cli_help()}
        if self.required:
            kwargs["required"] = True
        else:
            kwargs["default"] = self._cli_default()
        if self.choices is not None:
            kwargs["choices"] = [self._cli_spelling(c) for c in self.choices]
        elif self.parse is not None:
            kwargs["type"] = self.parse
        elif self.kind in (int, float):
            kwargs["type"] = self.kind
        if self.metavar:
            kwargs["metavar"] = self.metavar
        parser.add_argument(self.cli_flag, **kwargs)

    def _cli_spelling(self, value: Any) -> str:
        for text, v in self.cli_values.items():
            if v == value:
                return text
        return str(value)

    def _cli_default(self) -> Any:
        if self.choices is not None:
            return self._cli_spelling(self.default)
        return self.default

    def _cli_help(self) -> str:
        if self.required:
            return self.help
        shown = self._cli_spelling(self.default) if self.choices else self.default
        return f"{self.help} (default: {shown})" if self.help else f"default: {shown}"

    def read(self, args: argparse.Namespace) -> Any:
        """The value the command line gives (``convert`` for composite options)."""
        if self.convert is not None:
            return self.convert(args)
        value = getattr(args, self.dest, _MISSING)
        if value is _MISSING:
            return self.default
        if isinstance(value, str) and value in self.cli_values:
            return self.cli_values[value]
        return value


def parse_seed(text: str) -> int:
    """A random seed on the command line: a whole number ≥ 0 (numpy takes no negative seed)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: expected an integer ≥ 0")
    return value


def validate(options: Sequence[Option], values: dict[str, Any], owner: str) -> None:
    """Check every declared option's value (InvalidParameterError on the first bad one)."""
    for option in options:
        option.check(values[option.name], owner)


def add_to_parser(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, options: Sequence[Option]
) -> None:
    """The command-line flags of the options (one flag per option, declared order)."""
    for option in options:
        option.add_to(parser)


def from_args(options: Sequence[Option], args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for the model from a parsed command line."""
    return {o.name: o.read(args) for o in options if o.cli or o.convert is not None}


def markdown_table(options: Sequence[Option]) -> str:
    """The options as a Markdown table (name, flag, default, domain, meaning)."""
    rows = ["| option | flag | default | domain | meaning |", "|---|---|---|---|---|"]
    for o in options:
        default = "(required)" if o.required else f"`{o.default!r}`"
        flag = f"`{o.negate or o.cli_flag}`" if o.cli else "—"
        rows.append(f"| `{o.name}` | {flag} | {default} | {o.domain()} | {o.help} |")
    return "\n".join(rows)


def keyword_init(parameters: Sequence[Option]) -> Callable[..., None]:
    """__init__(self, *, <parameters>) that stores each argument as given (scikit-learn's
    convention for estimators: get_params and clone read them back)."""
    signature = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [
            inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default)
            for o in parameters
        ]
    )

    def __init__(self, **kwargs: Any) -> None:
        bound = signature.bind(self, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    return __init__
