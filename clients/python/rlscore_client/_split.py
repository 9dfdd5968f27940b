"""Request splitting for rlscore_client: chunk plans and the merge of the chunks' responses.

A request whose serialized size is over the client's max_request_bytes is sent as consecutive
chunks of whole groups (ScoreGroups, ComputeAdvantages) or items (Score); the responses are merged
so that the caller sees what the unsplit call returns:

    plan = plan_chunks([group_cost(g) for g in request.groups], budget, "groups")
    responses = [send(chunk(request, start, end)) for start, end in plan]
    merged = merge_score_groups(responses, deviation_of(request.advantage.deviation, responses))

Per-completion and per-group fields are concatenated (they depend on their group only). The batch
summary is recomputed: counts summed, the reward mean and deviation combined with the pairwise
update of Chan, Golub & LeVeque (1979) over a tree of adjacent chunks, as the server combines its
groups (advantage/reference.h) -- the same formula over a coarser tree, so reward_mean and
reward_std may differ from the unsplit call's in the last bits. Score's aggregate is recomputed
exactly as the server computes it (engine/score_aggregate.cc).

Pure: protobuf messages in, protobuf messages out; no I/O. Thread-safe (no shared state).
"""

from __future__ import annotations

import math
from typing import Iterable, List, NamedTuple, Sequence, Tuple

import grpc
from rlscore.v1 import advantage_pb2, scoring_pb2

from .errors import RlscoreError

# Verdicts that leave a completion out of its group's statistics (docs/DESIGN.md §1).
UNSCORABLE_VERDICTS = frozenset(
    {scoring_pb2.VERDICT_UNPARSEABLE_REFERENCE, scoring_pb2.VERDICT_BUDGET_EXCEEDED})

# Bytes a packed repeated field or a message field may add beyond its payload: a tag and a length
# of up to 5 bytes (payloads below 4 GiB).
FIELD_OVERHEAD = 6

# Upper bound for what a ComputeAdvantages response carries besides its per-group and per-reward
# arrays: the summary (8 counters, 3 doubles), the backend name and the fields' tags and lengths.
ADVANTAGES_RESPONSE_OVERHEAD = 1024


def varint_len(value: int) -> int:
    """Bytes of `value` (>= 0) as a protobuf varint."""
    return max(1, (value.bit_length() + 6) // 7)


def message_field_cost(size: int) -> int:
    """Bytes a sub-message of `size` bytes adds to its parent: tag, length, payload."""
    return 1 + varint_len(size) + size


def plan_chunks(costs: Sequence[Tuple[int, ...]], budgets: Tuple[int, ...],
                what: str) -> List[Tuple[int, int]]:
    """Consecutive [start, end) runs of units whose summed costs stay within `budgets`.

    Each unit (a group or an item) has one cost per budget (e.g. request bytes and response bytes).
    Greedy: a run grows until the next unit would overflow a budget. Raises RlscoreError
    RESOURCE_EXHAUSTED naming the unit, e.g. "groups[7]", when one unit alone is over a budget:
    units are never cut.
    """
    plan = []
    start = 0
    totals = [0] * len(budgets)
    for i, cost in enumerate(costs):
        for b, (c, budget) in enumerate(zip(cost, budgets)):
            if c > budget:
                raise RlscoreError(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    "%s[%d] alone needs %d bytes, over the %d bytes max_request_bytes leaves for "
                    "it%s; a request is split between whole %s only, so this one cannot be sent: "
                    "raise max_request_bytes (and the server's --max-message-bytes)" % (
                        what, i, c, budget, "" if b == 0 else " in the response", what))
        if any(t + c > budget for t, c, budget in zip(totals, cost, budgets)):
            plan.append((start, i))
            start = i
            totals = [0] * len(budgets)
        totals = [t + c for t, c in zip(totals, cost)]
    if start < len(costs) or not plan:
        plan.append((start, len(costs)))
    return plan


# --- Batch summary -------------------------------------------------------------------------------


class Moments(NamedTuple):
    """(n, mean, M2 = sum of squared deviations) of a set of rewards."""
    n: int
    mean: float
    m2: float


def merge_moments(a: Moments, b: Moments) -> Moments:
    """Chan, Golub & LeVeque's pairwise update, in the server's order of operations."""
    if b.n == 0:
        return a
    if a.n == 0:
        return b
    total = a.n + b.n
    delta = b.mean - a.mean
    b_over_total = b.n / total
    return Moments(total, a.mean + delta * b_over_total,
                   a.m2 + b.m2 + delta * delta * a.n * b_over_total)


def merge_tree(parts: List[Moments]) -> Moments:
    """Folds `parts` over the tree of adjacent pairs the server uses (advantage/reference.h)."""
    parts = list(parts)
    if not parts:
        return Moments(0, 0.0, 0.0)
    width = 1
    while width < len(parts):
        for j in range(0, len(parts) - width, 2 * width):
            parts[j] = merge_moments(parts[j], parts[j + width])
        width *= 2
    return parts[0]


def _denominator(n: int, deviation: int) -> int:
    return n if deviation == advantage_pb2.DEVIATION_POPULATION else n - 1


def _std(m2: float, n: int, deviation: int) -> float:
    return 0.0 if n < 2 else math.sqrt(m2 / _denominator(n, deviation))


def _scorable(summary: advantage_pb2.BatchSummary) -> int:
    return summary.completions - summary.unscorable


def _chunk_m2_candidates(groups: advantage_pb2.GroupStatistics) -> Tuple[float, float]:
    """M2 of a chunk from its groups' statistics, under (sample, population) deviation."""
    between = merge_tree([Moments(n, mean, 0.0) for n, mean in zip(groups.scorable, groups.mean)
                          if n > 0]).m2
    sample = population = between
    for n, std in zip(groups.scorable, groups.std):
        if n >= 2 and std > 0.0:
            sample += std * std * (n - 1)
            population += std * std * n
    return sample, population


def deviation_of(requested: int, chunks: Iterable) -> int:
    """The deviation the server used for `chunks` (responses with `groups` and `summary`).

    `requested` is the request's AdvantageOptions.deviation; when it is unset the server used its
    own default (the profile's, or its configuration's), which the responses reveal: a chunk's
    reward_std matches its groups' statistics under one deviation only. When no chunk has any
    spread (every chunk's rewards identical) nothing reveals it and sample (the built-in default)
    is assumed.
    """
    if requested in (advantage_pb2.DEVIATION_SAMPLE, advantage_pb2.DEVIATION_POPULATION):
        return requested
    for chunk in chunks:
        n = _scorable(chunk.summary)
        if n < 2 or chunk.summary.reward_std == 0.0:
            continue
        sample, population = _chunk_m2_candidates(chunk.groups)
        std = chunk.summary.reward_std
        if abs(_std(sample, n, advantage_pb2.DEVIATION_SAMPLE) - std) <= abs(
                _std(population, n, advantage_pb2.DEVIATION_POPULATION) - std):
            return advantage_pb2.DEVIATION_SAMPLE
        return advantage_pb2.DEVIATION_POPULATION
    return advantage_pb2.DEVIATION_SAMPLE


def merge_summaries(summaries: Sequence[advantage_pb2.BatchSummary],
                    deviation: int) -> advantage_pb2.BatchSummary:
    """The summary of the whole batch from its chunks' summaries (see the module docstring)."""
    merged = advantage_pb2.BatchSummary()
    causes = [0] * len(advantage_pb2.ZeroVarianceCause.values())
    parts = []
    for s in summaries:
        merged.groups += s.groups
        merged.completions += s.completions
        merged.unscorable += s.unscorable
        merged.zero_variance_groups += s.zero_variance_groups
        for cause, count in enumerate(s.groups_by_cause):
            causes[cause] += count
        n = _scorable(s)
        parts.append(Moments(n, s.reward_mean, s.reward_std * s.reward_std * _denominator(
            n, deviation) if n >= 2 else 0.0))
    merged.groups_by_cause.extend(causes)
    merged.zero_variance_fraction = (
        merged.zero_variance_groups / merged.groups if merged.groups else 0.0)
    total = merge_tree(parts)
    merged.reward_mean = total.mean
    merged.reward_std = _std(total.m2, total.n, deviation)
    return merged


# --- The batch-normalised estimator --------------------------------------------------------------


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def looks_batch_normalized(rewards: Sequence[float], group_sizes: Sequence[int],
                           response) -> bool:
    """True when `response`'s advantages were scaled by the batch's deviation, not the group's.

    For a request that left the estimator to the server (a profile's or the configuration's
    default): every estimator is (r - group mean) * factor, and only the batch-normalised factor,
    1 / reward_std of the batch, depends on the rest of the batch. The first group with signal
    whose factor tells the estimators apart decides. `rewards` and `group_sizes` are the chunk's.
    """
    batch_factor = 1.0 / response.summary.reward_std if response.summary.reward_std > 0 else None
    offset = 0
    stats = response.groups
    for g, n in enumerate(group_sizes):
        begin, offset = offset, offset + n
        if stats.cause[g] != advantage_pb2.ZERO_VARIANCE_CAUSE_NONE or stats.scorable[g] < 2:
            continue
        i = max(range(begin, offset), key=lambda j: abs(response.advantages[j]))
        deviation = rewards[i] - stats.mean[g]
        if deviation == 0.0 or response.advantages[i] == 0.0:
            continue
        factor = response.advantages[i] / deviation
        m = stats.scorable[g]
        others = [1.0 / stats.std[g] if stats.std[g] > 0 else None, 1.0, m / (m - 1)]
        if batch_factor is not None and _close(factor, batch_factor):
            if not any(o is not None and _close(o, batch_factor) for o in others):
                return True
            continue  # the factors coincide here: another group decides
        return False
    return False


# --- Responses -----------------------------------------------------------------------------------


def _check_same_profile(chunks) -> None:
    hashes = {c.profile_hash for c in chunks}
    if len(hashes) > 1:
        raise RlscoreError(
            grpc.StatusCode.ABORTED,
            "the chunks of a split request were scored by different profiles (hashes %s): the "
            "server's configuration changed during the call; send it again" % ", ".join(
                sorted(hashes)))


def _backend(chunks) -> str:
    names = []
    for c in chunks:
        if c.backend not in names:
            names.append(c.backend)
    return "+".join(names)


def merge_score_groups(chunks: Sequence[scoring_pb2.ScoreGroupsResponse],
                       deviation: int) -> scoring_pb2.ScoreGroupsResponse:
    """One ScoreGroupsResponse from the responses of consecutive chunks of groups."""
    _check_same_profile(chunks)
    merged = scoring_pb2.ScoreGroupsResponse()
    for c in chunks:
        merged.MergeFrom(c)  # concatenates the repeated fields, per completion and per group
    merged.summary.CopyFrom(merge_summaries([c.summary for c in chunks], deviation))
    merged.backend = _backend(chunks)
    return merged


def merge_compute_advantages(chunks: Sequence[advantage_pb2.ComputeAdvantagesResponse],
                             deviation: int) -> advantage_pb2.ComputeAdvantagesResponse:
    """One ComputeAdvantagesResponse from the responses of consecutive chunks of groups."""
    merged = advantage_pb2.ComputeAdvantagesResponse()
    for c in chunks:
        merged.MergeFrom(c)
    merged.summary.CopyFrom(merge_summaries([c.summary for c in chunks], deviation))
    merged.backend = _backend(chunks)
    return merged


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for n samples of which c are correct (Chen et al. 2021):
    1 - C(n - c, k) / C(n, k) as the server's product. REQUIRES: k <= n, c <= n."""
    if n - c < k:
        return 1.0
    keep = 1.0
    for i in range(n - c + 1, n + 1):
        keep *= 1.0 - k / i
    return 1.0 - keep


def percentile(sorted_values: Sequence[int], q: float) -> float:
    """Nearest rank: the smallest value with at least q of the data at or below it."""
    if not sorted_values:
        return 0.0
    n = len(sorted_values)
    rank = min(max(math.ceil(q * n), 1), n)
    return float(sorted_values[rank - 1])


def score_aggregate(prompt_ids: Sequence[str], results: Sequence[scoring_pb2.CompletionResult],
                    ks: Sequence[int]) -> scoring_pb2.ScoreAggregate:
    """Score's aggregate over `results` (one per item, with the item's prompt id), as the server
    computes it: accuracy over scorable items, rates over all, nearest-rank length percentiles,
    verdict counts and pass@k (items without a prompt id are prompts of one sample, counted first;
    then the named prompts in id order)."""
    verdicts = [0] * len(scoring_pb2.Verdict.values())
    lengths = []
    accuracy_sum = 0.0
    scorable = well_formed = repeated = truncated = 0
    prompts = {}  # prompt id -> [scorable samples, correct samples]
    anonymous = anonymous_correct = 0
    for prompt_id, r in zip(prompt_ids, results):
        if 0 <= r.verdict < len(verdicts):
            verdicts[r.verdict] += 1
        lengths.append(r.num_tokens)
        well_formed += r.anatomy.well_formed
        repeated += r.repetition.detector != scoring_pb2.REPETITION_DETECTOR_NONE
        truncated += r.anatomy.truncated
        if r.verdict in UNSCORABLE_VERDICTS:
            continue
        scorable += 1
        accuracy_sum += r.components.accuracy
        correct = r.components.accuracy >= 1.0
        if not prompt_id:
            anonymous += 1
            anonymous_correct += correct
            continue
        counts = prompts.setdefault(prompt_id, [0, 0])
        counts[0] += 1
        counts[1] += correct

    agg = scoring_pb2.ScoreAggregate()
    items = len(results)
    per_item = float(items) if items else 1.0
    agg.items = items
    agg.accuracy = accuracy_sum / scorable if scorable else 0.0
    agg.format_rate = well_formed / per_item
    agg.repetition_rate = repeated / per_item
    agg.truncation_rate = truncated / per_item
    lengths.sort()
    agg.length_tokens.p50 = percentile(lengths, 0.50)
    agg.length_tokens.p90 = percentile(lengths, 0.90)
    agg.length_tokens.p99 = percentile(lengths, 0.99)
    agg.length_tokens.max = float(lengths[-1]) if lengths else 0.0
    agg.verdicts.extend(verdicts)
    for k in sorted(set(ks or [1])):
        total = float(anonymous_correct) if k == 1 else 0.0
        counted = anonymous if k == 1 else 0
        for prompt_id in sorted(prompts):  # code point order == the server's byte order
            n, c = prompts[prompt_id]
            if n < k:
                continue
            total += pass_at_k(n, c, k)
            counted += 1
        agg.pass_at_k.add(k=k, prompts=counted, value=total / counted if counted else 0.0)
    return agg


def merge_score(chunks: Sequence[scoring_pb2.ScoreResponse], prompt_ids: Sequence[str],
                ks: Sequence[int]) -> scoring_pb2.ScoreResponse:
    """One ScoreResponse from the responses of consecutive chunks of items; `prompt_ids` are
    every item's, in request order."""
    _check_same_profile(chunks)
    merged = scoring_pb2.ScoreResponse()
    for c in chunks:
        merged.rewards.extend(c.rewards)
        merged.results.extend(c.results)
    merged.aggregate.CopyFrom(score_aggregate(prompt_ids, merged.results, ks))
    merged.profile_hash = chunks[0].profile_hash if chunks else ""
    return merged
