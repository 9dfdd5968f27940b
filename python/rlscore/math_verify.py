"""Math-Verify's parse and verify on rlscore's verifier: a drop-in for `math_verify`.

    from rlscore.math_verify import parse, verify      # was: from math_verify import ...

    gold = parse("$\\\\frac12$")
    answer = parse("The answer is $0.5$")
    verify(gold, answer)                                # True

The signatures and defaults are Math-Verify's (0.8). What differs, by design:
  - No sympy and no timeout signal. Every call is bounded by the verifier's work budgets (answer
    bytes, depth, nodes, arithmetic steps), so it is safe on any thread: verl's and TRL's reward
    workers included, where Math-Verify's SIGALRM timeout cannot run. `parsing_timeout` and
    `timeout_seconds` are accepted and have nothing to do.
  - parse() returns a ParsedAnswer: a list that is empty when no answer was found, else
    [answer, answer] (where Math-Verify puts the sympy expression and its string, both are the
    extracted answer's text here), and that remembers the text it came from; verify() judges
    that text, so the verifier sees what Math-Verify's parser saw.
  - Extraction configs: LatexExtractionConfig and ExprExtractionConfig select answer
    verification (the task "math"); StringExtractionConfig selects a choice letter when its
    strings are single letters ("multiple_choice"), else exact text ("exact"). Their other
    fields (anchors, boxed priority, normalisation) are accepted and have no effect: rlscore's
    extraction rules are fixed (docs/VERIFIER.md).
  - verify's float_rounding, numeric_precision, strict and allow_set_relation_comp are accepted;
    rlscore's equivalence rules are fixed (numbers compare to a relative 1e-6, sets and intervals
    as sets, equations and inequalities by their relation).
  - Neither function raises on model output (raise_on_error is accepted for the signature).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Literal, Optional, Sequence, Tuple, Union

from ._native_loader import native

__all__ = ["parse", "verify", "ParsedAnswer", "LatexExtractionConfig", "ExprExtractionConfig",
           "StringExtractionConfig"]


@dataclass(frozen=True)
class LatexExtractionConfig:
    """Extract a LaTeX answer (Math-Verify's fields, accepted; see the module's docstring)."""
    try_extract_without_anchor: bool = True
    boxed_match_priority: int = 50
    normalization_config: Any = None


@dataclass(frozen=True)
class ExprExtractionConfig:
    """Extract a plain expression (Math-Verify's fields, accepted)."""
    try_extract_without_anchor: bool = True


@dataclass(frozen=True)
class StringExtractionConfig:
    """Extract one of `strings`: a choice letter when they are single letters, else exact text."""
    strings: Tuple[str, ...] = field(default_factory=lambda: ("A", "B", "C", "D"))
    try_extract_without_anchor: bool = True
    lowercase: bool = True


ExtractionTarget = Union[LatexExtractionConfig, ExprExtractionConfig, StringExtractionConfig]


_DEFAULT_EXTRACTION = (LatexExtractionConfig(), ExprExtractionConfig())


def _task(extraction_config: Sequence[Any]) -> str:
    """The verifier's task for Math-Verify extraction configs (of this module or Math-Verify's
    own: they are recognised by class name)."""
    if extraction_config is _DEFAULT_EXTRACTION:
        return "math"
    names = {type(c).__name__ for c in extraction_config}
    if names & {"LatexExtractionConfig", "ExprExtractionConfig"} or not names:
        return "math"
    strings = [s for c in extraction_config for s in getattr(c, "strings", ())]
    if strings and all(len(s) == 1 and s.isalpha() for s in strings):
        return "multiple_choice"
    return "exact"


class ParsedAnswer(List[str]):
    """parse()'s result: [] when no answer was found, else [answer, answer]. `text` is the text it
    was parsed from, `task` the verifier's task for its extraction configs."""

    def __init__(self, text: str, task: str, parts: Sequence[str]):
        if parts:
            answer = parts[0] if len(parts) == 1 else ", ".join(parts)
            super().__init__((answer, answer))
        self.text = text
        self.task = task


def parse(pred: str,
          extraction_config: Sequence[ExtractionTarget] = _DEFAULT_EXTRACTION,
          fallback_mode: Literal["no_fallback", "first_match"] = "first_match",
          extraction_mode: Literal["first_match", "any_match"] = "any_match",
          parsing_timeout: Optional[int] = 5,
          raise_on_error: bool = False) -> ParsedAnswer:
    """Finds the final answer in `pred` (a model's output or a gold answer) as the verifier does:
    the last \\\\boxed{...}, an <answer> tag, an "answer is" sentence, the last formula, or the
    final expression. Never raises; bounded by the verifier's budgets on any thread."""
    del fallback_mode, extraction_mode, parsing_timeout, raise_on_error
    text = pred if isinstance(pred, str) else str(pred)
    task = _task(extraction_config)
    try:
        parts = _extract_native(text, False, task)
    except Exception:  # noqa: BLE001 - model output must never raise
        parts = []
    return ParsedAnswer(text, task, parts)


def _extract_native(text: str, reference: bool, task: str):
    global _extract_native
    _extract_native = native().extract  # bound once: later calls skip the loader
    return _extract_native(text, reference, task)


def _is_correct_native(gold: str, answer: str, task: str) -> bool:
    global _is_correct_native
    _is_correct_native = native().is_correct  # bound once: later calls skip the loader
    return _is_correct_native(gold, answer, task)


def _verify_native(gold: str, answer: str, task: str):
    global _verify_native
    _verify_native = native().verify  # bound once: later calls skip the loader
    return _verify_native(gold, answer, task)


def _texts(value: Any) -> Tuple[List[str], Optional[str]]:
    """The texts to judge in a verify() argument, and the task they were parsed for."""
    if isinstance(value, ParsedAnswer):
        return ([value.text] if value else []), value.task
    if isinstance(value, (list, tuple)):
        texts: List[str] = []
        task = None
        for v in value:
            inner, inner_task = _texts(v)
            texts.extend(inner)
            task = task or inner_task
        return texts, task
    if value is None:
        return [], None
    return [value if isinstance(value, str) else str(value)], None  # sympy objects print as text


def verify(gold: Any, target: Any, float_rounding: int = 6, numeric_precision: int = 15,
           strict: bool = True, allow_set_relation_comp: bool = False,
           timeout_seconds: Optional[int] = 5, raise_on_error: bool = False) -> bool:
    """True when some answer of `target` is equivalent to some answer of `gold` (each a
    parse() result, a string, or a list of them; a string is judged as parse() would read it).
    Never raises on model output."""
    if type(gold) is ParsedAnswer and type(target) is ParsedAnswer:  # the common call, fast
        if not gold or not target:
            return False
        try:
            return _is_correct_native(gold.text, target.text, gold.task)
        except Exception:  # noqa: BLE001 - model output must never raise
            return False
    golds, gold_task = _texts(gold)
    targets, target_task = _texts(target)
    task = gold_task or target_task or "math"
    for g in golds:
        for t in targets:
            try:
                verdict, _, _ = _verify_native(g, t, task)
            except Exception:  # noqa: BLE001 - model output must never raise
                continue
            if verdict == "CORRECT":
                return True
    return False
