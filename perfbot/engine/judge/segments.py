"""The arithmetic of change points: a series of commit values cut into flat segments.

The values are one number per commit in the metric's judging units (``noise.judging_units``:
logs for ratio metrics, points, counts). Everything here is plain arithmetic on floats,
in O(n) memory and at most O(n²) time for the few hundred commits a window holds.

1. ``commit_noise``: the standard deviation of one commit's value, from the differences
   of neighbouring commits. A step between two commits moves one difference and a spike
   two, so the differences see the noise and hardly the changes; the squared differences
   are clipped at three robust standard deviations first, so that a handful of steps or
   spikes inflate it by a few percent at most (unless a tenth or more are that far: then
   the metric has tails, and they are its noise).
2. ``winsorised``: every value pulled to within ``clip`` standard deviations of the
   median of the five commits around it. An outlying commit (a spike, a runner hiccup)
   then weighs no more than an ordinary bad run, while a step (three or more commits
   at the new level) leaves the medians on its sides alone.
3. ``partition``: the segmentation with the least squared error plus a penalty per
   change, segments of ``min_segment`` commits or more (optimal partitioning, with
   PELT's pruning): the exact maximum-likelihood cut for Gaussian noise, so a step is
   placed at the commit where it happened, not near it.
4. ``prune``: each cut must separate its neighbouring segments by ``threshold`` standard
   errors (a two-sample z on their means, at most ``LOCAL`` commits each side) and by
   ``rank_limit`` in a Mann–Whitney test on their ranks; the weakest failing cut goes,
   its neighbours are judged again, and so on (Otava's merge step, with a known noise
   instead of a t test).
5. ``best_ramp`` and ``staircase_error``: how well one straight ramp between two flat
   levels fits a stretch, against the steps found in it (a slow drift, cut into steps).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

# A commit's residual beyond this many robust standard deviations is clipped in the
# noise estimate (a step's or a spike's difference), not ignored.
_CLIP_DIFFERENCE = 3.0
# Unless more differences than this share are that far (as noise.OUTLIER_SHARE for
# same-commit repeats: so many are no accidents).
_TAIL_SHARE = 0.1
# The commits each side of a cut that judge it: levels far from the cut say little about
# it, and a long window would let an old, undetected drift weigh in.
LOCAL = 60
_HALF_WINDOW = 2  # the running median of five commits that winsorising pulls towards


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return ordered[middle - 1] / 2 + ordered[middle] / 2


def quantile(values: Sequence[float], share: float) -> float:
    """The ``share`` quantile, linearly interpolated between the order statistics."""
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    fraction = position - low
    return ordered[low] * (1 - fraction) + ordered[high] * fraction


def commit_noise(values: Sequence[float]) -> float:
    """One commit's standard deviation, from neighbouring differences (0 when all equal)."""
    differences = [b - a for a, b in itertools.pairwise(values)]
    if not differences:
        return 0.0
    # A difference of two commits has twice one commit's variance.
    robust = 1.4826 * median([abs(d) for d in differences]) / math.sqrt(2)
    limit = _CLIP_DIFFERENCE * robust * math.sqrt(2)
    beyond = sum(1 for d in differences if abs(d) > limit)
    if limit > 0 and beyond <= _TAIL_SHARE * len(differences):
        squares = [min(d * d, limit * limit) for d in differences]
    else:
        # More than half the neighbours are equal (a counter at zero, a quantised tool),
        # or far differences are too many to be a few steps and spikes: the metric has
        # tails (a loaded runner), and its tails are its noise.
        squares = [d * d for d in differences]
    return math.sqrt(math.fsum(squares) / (2 * len(squares)))


def winsorised(values: Sequence[float], sigma: float, clip: float) -> list[float]:
    """Each value within ``clip``·``sigma`` of the median of the five commits around it."""
    if sigma <= 0:
        return list(values)
    reach = clip * sigma
    result = []
    for index, value in enumerate(values):
        around = values[max(0, index - _HALF_WINDOW) : index + _HALF_WINDOW + 1]
        centre = median(around)
        result.append(min(max(value, centre - reach), centre + reach))
    return result


class _Sums:
    """Prefix sums: the mean and squared error of any slice in O(1)."""

    def __init__(self, values: Sequence[float]) -> None:
        self.first = [0.0]
        self.second = [0.0]
        # Centred on the first value: logs of gigabits and counts of millions alike keep
        # their digits when squared.
        self.offset = values[0] if values else 0.0
        for value in values:
            shifted = value - self.offset
            self.first.append(self.first[-1] + shifted)
            self.second.append(self.second[-1] + shifted * shifted)

    def mean(self, start: int, stop: int) -> float:
        return (self.first[stop] - self.first[start]) / (stop - start) + self.offset

    def error(self, start: int, stop: int) -> float:
        total = self.first[stop] - self.first[start]
        squares = self.second[stop] - self.second[start]
        return max(squares - total * total / (stop - start), 0.0)


def partition(values: Sequence[float], sigma: float, penalty: float, min_segment: int) -> list[int]:
    """The indexes where a new segment starts (each ≥ 1), least squared error plus
    ``penalty`` (in units of sigma²) per change, every segment ``min_segment`` long."""
    n = len(values)
    if sigma <= 0 or n < 2 * min_segment:
        return []
    sums = _Sums(values)
    scale = 1 / (sigma * sigma)
    best = [math.inf] * (n + 1)
    best[0] = -penalty
    previous = [0] * (n + 1)
    candidates: list[int] = []
    for end in range(min_segment, n + 1):
        start = end - min_segment
        if start == 0 or start >= min_segment:
            candidates.append(start)
        costs = [best[s] + sums.error(s, end) * scale + penalty for s in candidates]
        if not costs:
            continue
        lowest = min(range(len(costs)), key=costs.__getitem__)
        best[end] = costs[lowest]
        previous[end] = candidates[lowest]
        # PELT: a start that is already worse than the best by more than a change costs
        # can never become the best start of a later segment (squared error is additive).
        candidates = [
            s for s, cost in zip(candidates, costs, strict=True) if cost - penalty <= best[end]
        ]
    cuts = []
    end = n
    while end > 0:
        start = previous[end]
        if start > 0:
            cuts.append(start)
        end = start
    cuts.reverse()
    return cuts


@dataclass(frozen=True, slots=True)
class Cut:
    """A change between segments [start, index) and [index, stop), judged on at most
    ``LOCAL`` commits each side: its z statistic on the means (against the noise) and the
    z of a Mann–Whitney test on their ranks."""

    index: int
    start: int
    stop: int
    statistic: float
    ranks: float


def judge_cut(values: Sequence[float], sigma: float, start: int, index: int, stop: int) -> Cut:
    before = values[max(start, index - LOCAL) : index]
    after = values[index : min(stop, index + LOCAL)]
    difference = math.fsum(after) / len(after) - math.fsum(before) / len(before)
    error = sigma * math.sqrt(1 / len(before) + 1 / len(after))
    statistic = abs(difference) / error if error > 0 else (math.inf if difference else 0.0)
    return Cut(index, start, stop, statistic, rank_z(before, after))


def rank_z(before: Sequence[float], after: Sequence[float]) -> float:
    """|z| of the Mann–Whitney U of two samples (mid-ranks, the variance corrected for
    ties), 0 when every value is tied. Ranks care nothing for the size of a tail: a run
    of three bad commits among a hundred is not a level, however far off they are."""
    pooled = sorted([(value, 0) for value in before] + [(value, 1) for value in after])
    n1, n2 = len(before), len(after)
    total = n1 + n2
    rank_sum = 0.0
    ties = 0.0
    position = 0
    while position < total:
        end = position
        while end + 1 < total and pooled[end + 1][0] == pooled[position][0]:
            end += 1
        mid_rank = (position + end) / 2 + 1
        count = end - position + 1
        ties += count**3 - count
        rank_sum += mid_rank * sum(1 for i in range(position, end + 1) if pooled[i][1] == 1)
        position = end + 1
    u = rank_sum - n2 * (n2 + 1) / 2
    variance = n1 * n2 / 12 * ((total + 1) - ties / (total * (total - 1)))
    if variance <= 0:
        return 0.0
    return abs(u - n1 * n2 / 2) / math.sqrt(variance)


def prune(
    values: Sequence[float], cuts: Sequence[int], sigma: float, threshold: float, rank_limit: float
) -> list[Cut]:
    """The cuts whose neighbouring segments differ by ``threshold`` standard errors and
    whose ranks agree (``rank_limit``); the weakest other cut is removed (merging two
    segments), the rest judged again, until every cut passes."""
    kept = list(cuts)
    while True:
        judged = _judged(values, kept, sigma)
        failing = [c for c in judged if c.statistic < threshold or c.ranks < rank_limit]
        if not failing:
            return judged
        kept.remove(min(failing, key=lambda cut: cut.statistic).index)


def _judged(values: Sequence[float], cuts: Sequence[int], sigma: float) -> list[Cut]:
    bounds = [0, *cuts, len(values)]
    return [
        judge_cut(values, sigma, bounds[i - 1], bounds[i], bounds[i + 1])
        for i in range(1, len(bounds) - 1)
    ]


def staircase_error(values: Sequence[float], start: int, cuts: Sequence[int], stop: int) -> float:
    """The squared error of one flat level per segment of [start, stop) cut at ``cuts``."""
    bounds = [start, *cuts, stop]
    return math.fsum(_squared_error(values[a:b]) for a, b in itertools.pairwise(bounds))


@dataclass(frozen=True, slots=True)
class Ramp:
    """The best straight ramp of ``width`` commits from ``begin`` between two flat levels."""

    begin: int
    width: int
    error: float


# Ramp widths tried, in commits: a ramp narrower than the first is a step. Widths 15 %
# apart lose little of a real ramp's fit to the nearest one; the widest a window holds
# (a drift that lasts the whole window) is tried too.
RAMP_WIDTHS = tuple(sorted({round(8 * 1.15**k) for k in range(28)}))  # 8 … 348


def best_ramp(values: Sequence[float], start: int, stop: int) -> Ramp | None:
    """The least-squares ramp (flat, straight, flat: a continuous broken line) through
    [start, stop), over ``RAMP_WIDTHS`` and every beginning; None when none fits."""
    window = values[start:stop]
    m = len(window)
    prefix = _RampSums(window)
    best: Ramp | None = None
    widths = [width for width in RAMP_WIDTHS if width < m - 1]
    if m - 2 >= RAMP_WIDTHS[0]:
        widths.append(m - 2)
    for width in widths:
        for begin in range(1, m - width):
            error = prefix.ramp_error(begin, width)
            if best is None or error < best.error:
                best = Ramp(begin + start, width, error)
    return best


class _RampSums:
    """Prefix sums of 1, x, x², y, x·y and y² for the squared error of any ramp in O(1)."""

    def __init__(self, values: Sequence[float]) -> None:
        self.m = len(values)
        offset = values[0] if values else 0.0
        self.y = [0.0]
        self.xy = [0.0]
        self.x = [0.0]
        self.xx = [0.0]
        self.yy = 0.0
        for x, value in enumerate(values):
            y = value - offset
            self.y.append(self.y[-1] + y)
            self.xy.append(self.xy[-1] + x * y)
            self.x.append(self.x[-1] + x)
            self.xx.append(self.xx[-1] + x * x)
            self.yy += y * y

    def ramp_error(self, begin: int, width: int) -> float:
        """y ≈ L + D·g(x): g is 0 before ``begin``, rises by 1/(width+1) a commit over the
        ramp and is 1 from ``begin + width`` on; least squares in L and D."""
        end = begin + width
        scale = width + 1
        shift = begin - 1
        count = width
        sx, sxx = self.x[end] - self.x[begin], self.xx[end] - self.xx[begin]
        sy, sxy = self.y[end] - self.y[begin], self.xy[end] - self.xy[begin]
        high = self.m - end
        g = (sx - shift * count) / scale + high
        gg = (sxx - 2 * shift * sx + shift * shift * count) / scale**2 + high
        gy = (sxy - shift * sy) / scale + (self.y[self.m] - self.y[end])
        total_y = self.y[self.m]
        sgg = gg - g * g / self.m
        sgy = gy - g * total_y / self.m
        syy = self.yy - total_y * total_y / self.m
        if sgg <= 0:
            return max(syy, 0.0)
        return max(syy - sgy * sgy / sgg, 0.0)


def _squared_error(values: Sequence[float]) -> float:
    if not values:
        return 0.0
    mean = math.fsum(values) / len(values)
    return math.fsum((value - mean) ** 2 for value in values)
