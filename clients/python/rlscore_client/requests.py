"""Requests from plain Python values: the rlscore.v1 messages built from dicts, strings and lists,
with a ValueError or TypeError that names the offending field. Shared by the gRPC Client and the
in-process engine (the rlscore package), so both take the same inputs; needs no gRPC.

    request = scoring_pb2.ScoreGroupsRequest(profile="")
    request.groups.append(_group({"reference": "42", "completions": ["\\boxed{42}"]}, "groups[0]"))
"""

from __future__ import annotations

import json
from typing import Any, Iterable, List, Mapping, Optional, Union

try:
    from rlscore.v1 import advantage_pb2, scoring_pb2
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "rlscore_client needs the generated rlscore.v1 messages on sys.path: install the rlscore "
        "package (README, \"Python\"), or build the project and set "
        "PYTHONPATH=build/python:clients/python") from e

CompletionLike = Union[str, bytes, Mapping[str, Any], "scoring_pb2.Completion"]
GroupLike = Union[Mapping[str, Any], "scoring_pb2.Group"]
ItemLike = Union[Mapping[str, Any], "scoring_pb2.ScoreItem"]

_COMPLETION_KEYS = frozenset({"text", "token_ids", "num_tokens", "finished", "external_accuracy"})
# An IFEval row's "instruction_id_list" and "kwargs" may stand for the reference of task IF.
_IFEVAL_KEYS = frozenset({"instruction_id_list", "kwargs"})
_GROUP_KEYS = frozenset({"prompt_id", "references", "reference", "task", "completions"}) | _IFEVAL_KEYS
_ITEM_KEYS = frozenset({"prompt_id", "completion", "references", "reference", "task"}) | _IFEVAL_KEYS
# Short names of tasks, beside the enum's own (math, numeric, ..., instruction_following).
_TASK_ALIASES = {"if": "INSTRUCTION_FOLLOWING", "ifeval": "INSTRUCTION_FOLLOWING"}
_ADVANTAGE_KEYS = frozenset({"estimator", "deviation", "zero_variance_threshold", "keep_band"})


def _enum(enum_type, prefix: str, value: Union[int, str], where: str) -> int:
    """An enum value from its number or its name, with or without the prefix, any case."""
    if isinstance(value, bool):
        raise TypeError("%s: expected an enum name or value, got %r" % (where, value))
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        name = value.upper()
        if not name.startswith(prefix):
            name = prefix + name
        try:
            return enum_type.Value(name)
        except ValueError:
            known = ", ".join(n[len(prefix):].lower() for n in enum_type.keys())
            raise ValueError("%s: unknown value %r (one of %s)" % (where, value, known)) from None
    try:
        return int(value)  # numpy integers
    except (TypeError, ValueError):
        raise TypeError("%s: expected an enum name or value, got %r" % (where, value)) from None


def _check_keys(d: Mapping[str, Any], allowed: frozenset, where: str) -> None:
    unknown = set(d) - allowed
    if unknown:
        raise ValueError("%s: unknown key(s) %s (allowed: %s)" % (
            where, ", ".join(sorted(map(str, unknown))), ", ".join(sorted(allowed))))


def _utf8(text: Union[str, bytes], where: str) -> bytes:
    if isinstance(text, bytes):
        return text
    if isinstance(text, str):
        return text.encode("utf-8", "surrogatepass")
    raise TypeError("%s.text: expected str or bytes, got %s" % (where, type(text).__name__))


def _completion(c: CompletionLike, where: str) -> scoring_pb2.Completion:
    if isinstance(c, scoring_pb2.Completion):
        return c
    if isinstance(c, (str, bytes)):
        return scoring_pb2.Completion(text=_utf8(c, where))
    if not isinstance(c, Mapping):
        raise TypeError("%s: expected str, dict or rlscore.v1.Completion, got %s" % (
            where, type(c).__name__))
    _check_keys(c, _COMPLETION_KEYS, where)
    out = scoring_pb2.Completion(text=_utf8(c.get("text", ""), where))
    if c.get("token_ids") is not None:
        out.token_ids.extend(_ints(c["token_ids"]))
    if c.get("num_tokens") is not None:
        out.num_tokens = int(c["num_tokens"])
    if c.get("finished") is not None:
        out.finished = bool(c["finished"])
    if c.get("external_accuracy") is not None:
        out.external_accuracy = float(c["external_accuracy"])
    return out


def _reference_text(value: Any) -> str:
    # An instruction list of task IF ({"instruction_id_list": [...], "kwargs": [...]}) travels as
    # its JSON text.
    if isinstance(value, Mapping):
        return json.dumps(value)
    return str(value)


def as_references(value: Any) -> List[str]:
    """A reference answer as the list of equivalent forms the API takes: a string becomes a list
    of one, a list, tuple or numpy array a list of strings, None none, a dict (an instruction
    list of task IF) its JSON text, anything else its str()."""
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        value = value.tolist()
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [_reference_text(v) for v in value]
    return [_reference_text(value)]


def _references(d: Mapping[str, Any], where: str) -> List[str]:
    if "references" in d and "reference" in d:
        raise ValueError("%s: give references or reference, not both" % where)
    if "instruction_id_list" in d:
        if "references" in d or "reference" in d:
            raise ValueError("%s: give an instruction_id_list or references, not both" % where)
        return [json.dumps({"instruction_id_list": d["instruction_id_list"],
                            "kwargs": d.get("kwargs")})]
    return as_references(d.get("references", d.get("reference")))


def _prompt_id(d: Mapping[str, Any], where: str) -> str:
    """A prompt id: a str, or an int (numpy's too) as its decimal text, as `rlscore score` reads
    one; None or absent is no prompt."""
    value = d.get("prompt_id")
    if hasattr(value, "tolist"):  # numpy scalars
        value = value.tolist()
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise TypeError("%s.prompt_id: expected a str or an int, got %s" % (
        where, type(value).__name__))


def _task(d: Mapping[str, Any], where: str) -> Optional[int]:
    """The task a dict names (an IFEval row names IF by its instruction_id_list), or None."""
    task = d.get("task")
    if task is None:
        return scoring_pb2.TASK_INSTRUCTION_FOLLOWING if "instruction_id_list" in d else None
    if isinstance(task, str):
        task = _TASK_ALIASES.get(task.lower(), task)
    return _enum(scoring_pb2.Task, "TASK_", task, where + ".task")


def _group(g: GroupLike, where: str) -> scoring_pb2.Group:
    if isinstance(g, scoring_pb2.Group):
        return g
    if not isinstance(g, Mapping):
        raise TypeError("%s: expected a dict or rlscore.v1.Group, got %s" % (
            where, type(g).__name__))
    _check_keys(g, _GROUP_KEYS, where)
    out = scoring_pb2.Group(prompt_id=_prompt_id(g, where), references=_references(g, where))
    task = _task(g, where)
    if task is not None:
        out.task = task
    out.completions.extend(_completion(c, "%s.completions[%d]" % (where, i))
                           for i, c in enumerate(g.get("completions", ())))
    return out


def _score_item(item: ItemLike, where: str) -> scoring_pb2.ScoreItem:
    if isinstance(item, scoring_pb2.ScoreItem):
        return item
    if not isinstance(item, Mapping):
        raise TypeError("%s: expected a dict or rlscore.v1.ScoreItem, got %s" % (
            where, type(item).__name__))
    _check_keys(item, _ITEM_KEYS, where)
    out = scoring_pb2.ScoreItem(prompt_id=_prompt_id(item, where),
                                references=_references(item, where))
    out.completion.CopyFrom(_completion(item.get("completion", ""), where + ".completion"))
    task = _task(item, where)
    if task is not None:
        out.task = task
    return out


def _advantage_options(value) -> advantage_pb2.AdvantageOptions:
    if isinstance(value, advantage_pb2.AdvantageOptions):
        return value
    if not isinstance(value, Mapping):
        raise TypeError("advantage: expected a dict or rlscore.v1.AdvantageOptions, got %s"
                        % type(value).__name__)
    _check_keys(value, _ADVANTAGE_KEYS, "advantage")
    out = advantage_pb2.AdvantageOptions()
    if value.get("estimator") is not None:
        out.estimator = _enum(advantage_pb2.Estimator, "ESTIMATOR_", value["estimator"],
                              "advantage.estimator")
    if value.get("deviation") is not None:
        out.deviation = _enum(advantage_pb2.Deviation, "DEVIATION_", value["deviation"],
                              "advantage.deviation")
    if value.get("zero_variance_threshold") is not None:
        out.zero_variance_threshold = float(value["zero_variance_threshold"])
    if value.get("keep_band") is not None:  # (lo, hi): the groups to keep by mean accuracy
        lo, hi = value["keep_band"]
        out.keep_band.lo, out.keep_band.hi = float(lo), float(hi)
    return out


def _floats(values: Iterable[float]) -> Iterable[float]:
    tolist = getattr(values, "tolist", None)  # array.array and numpy: one conversion in C
    return tolist() if callable(tolist) else values


def _ints(values: Iterable[int]) -> Iterable[int]:
    tolist = getattr(values, "tolist", None)
    return tolist() if callable(tolist) else values


def score_groups_request(groups: Iterable[GroupLike], profile: str = "", advantage=None,
                         run_id: str = "", step: int = 0) -> scoring_pb2.ScoreGroupsRequest:
    """A ScoreGroupsRequest from groups as Client.score_groups takes them."""
    request = scoring_pb2.ScoreGroupsRequest(profile=profile, run_id=run_id, step=int(step))
    request.groups.extend(_group(g, "groups[%d]" % i) for i, g in enumerate(groups))
    if advantage is not None:
        request.advantage.CopyFrom(_advantage_options(advantage))
    return request


def score_request(items: Iterable[ItemLike], profile: str = "",
                  pass_at_k: Iterable[int] = ()) -> scoring_pb2.ScoreRequest:
    """A ScoreRequest from items as Client.score takes them."""
    request = scoring_pb2.ScoreRequest(profile=profile)
    request.items.extend(_score_item(item, "items[%d]" % i) for i, item in enumerate(items))
    request.pass_at_k.extend(_ints(pass_at_k))
    return request
