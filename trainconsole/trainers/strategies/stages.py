"""A model as a sequence of layers, and where to cut that sequence into pipeline stages.

The sequence is the chain of steps in the model's forward() (trainconsole/trainers/strategies/chain.py, by
torch.fx),
with each plain nn.Sequential step opened into its children, recursively: `features` of VGG, MobileNet,
EfficientNet, DenseNet, ConvNeXt, SqueezeNet, a ResNet's `layer1..4`, a RegNet's `trunk_output`, or a
plug-in that returns an nn.Sequential. The layers are the model's own submodules (plus parameter-free steps
such as the flatten between avgpool and classifier), so the stages share the original module's parameters
and saving the original module gives the usual state_dict keys.
"""

from __future__ import annotations

import itertools

from torch import nn

from ..errors import StrategyUnavailable
from .chain import chain_of


def layers_of(model: nn.Module) -> list[nn.Module]:
    """The model's forward pass as an ordered list of layers; StrategyUnavailable, saying why, if none."""
    layers = [layer for step in chain_of(model) for layer in _flat(step)]
    seen: set[int] = set()
    for layer in layers:
        if param_count(layer) and id(layer) in seen:  # its weights cannot sit in two stages at once
            raise StrategyUnavailable(f"model_parallel cannot split {type(model).__name__}: its forward() "
                                      f"calls the layer {type(layer).__name__} more than once")
        seen.add(id(layer))
    return layers


def _flat(step: nn.Module) -> list[nn.Module]:
    """A plain nn.Sequential (one whose forward is Sequential's own) opened into its children, recursively."""
    if not isinstance(step, nn.Sequential) or type(step).forward is not nn.Sequential.forward:
        return [step]
    return [layer for child in step.children() for layer in _flat(child)]


def param_count(layer: nn.Module) -> int:
    """Parameters of one layer (what stages are balanced by)."""
    return sum(p.numel() for p in layer.parameters())


def balanced_split(weights: list[int], stages: int) -> list[int]:
    """Split points (first layer index of stages 1..n-1) that minimise the heaviest stage's weight.

    Exact, by dynamic programming over prefix sums: O(stages * layers^2), trivial for real models.
    """
    n = len(weights)
    if not 1 <= stages <= n:
        raise StrategyUnavailable(f"cannot split {n} layers into {stages} stages")
    prefix = [0, *itertools.accumulate(weights)]
    inf = float("inf")
    # cost[s][i]: the heaviest stage when the first i layers form s stages; cut[s][i]: where stage s starts
    cost = [[inf] * (n + 1) for _ in range(stages + 1)]
    cut = [[0] * (n + 1) for _ in range(stages + 1)]
    cost[0][0] = 0
    for s in range(1, stages + 1):
        for i in range(s, n + 1):
            for j in range(s - 1, i):
                c = max(cost[s - 1][j], prefix[i] - prefix[j])
                if c < cost[s][i]:
                    cost[s][i], cut[s][i] = c, j
    points, i = [], n
    for s in range(stages, 1, -1):
        i = cut[s][i]
        points.append(i)
    return points[::-1]


def check_split_points(points: list[int], n_layers: int) -> list[int]:
    """User-given split points, validated: increasing integers in 1..n_layers-1."""
    ok = all(isinstance(p, int) and not isinstance(p, bool) for p in points)
    if not ok or any(b <= a for a, b in itertools.pairwise(points)) or (
            points and not 0 < points[0] <= points[-1] < n_layers):
        raise StrategyUnavailable(f"strategy.split_points = {points!r}: must be increasing layer indices "
                                  f"between 1 and {n_layers - 1} (this model has {n_layers} layers)")
    return list(points)


def cut(layers: list[nn.Module], points: list[int]) -> list[nn.Sequential]:
    """The layers cut at `points` into consecutive stages."""
    bounds = [0, *points, len(layers)]
    return [nn.Sequential(*layers[a:b]) for a, b in itertools.pairwise(bounds)]
