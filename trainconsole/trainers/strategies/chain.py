"""Find the chain of layers in a model's forward(), with torch.fx, so model_parallel can cut it into stages.

The model is traced with every submodule kept whole (a leaf); its forward() is a chain when each step takes
only the previous step's output (plus constants), as in torchvision's classifiers: `features -> avgpool ->
torch.flatten -> classifier`. Function and tensor-method steps (`torch.flatten(x, 1)`, `F.relu`,
`x.mean([2, 3])`) become parameter-free `Call` layers; the modules are the model's own objects, so stages
share its parameters. A graph that branches (a class token concatenated in ViT, a skip around two
top-level children) is not a chain and is refused with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.fx as fx
from torch import nn

from ..errors import StrategyUnavailable


class _Input:
    """Marks where a `Call` step's input goes among its arguments."""

    def __repr__(self) -> str:
        return "x"


INPUT = _Input()


class Call(nn.Module):
    """A function or tensor-method step of a forward() as a layer: `torch.flatten(x, 1)`, `x.mean([2, 3])`."""

    def __init__(self, op: str, target: str | Callable[..., Any], args: tuple, kwargs: dict) -> None:
        super().__init__()
        self.op, self.target, self.args, self.kwargs = op, target, args, kwargs

    def forward(self, x: Any) -> Any:
        args = fx.node.map_aggregate(self.args, lambda a: x if a is INPUT else a)
        kwargs = fx.node.map_aggregate(self.kwargs, lambda a: x if a is INPUT else a)
        if self.op == "call_method":
            return getattr(args[0], self.target)(*args[1:], **kwargs)
        return self.target(*args, **kwargs)

    def extra_repr(self) -> str:
        name = self.target if isinstance(self.target, str) else getattr(self.target, "__name__", self.target)
        return f"{name}{self.args}"


class _WholeModules(fx.Tracer):
    """Keeps every submodule as one call: the chain is looked for among the model's own children."""

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        return True


def chain_of(model: nn.Module) -> list[nn.Module]:
    """The steps of `model`'s forward() in order; StrategyUnavailable naming why when it is not a chain."""
    kind = type(model).__name__
    try:
        graph = _WholeModules().trace(model)
    except Exception as e:  # noqa: BLE001 - any trace failure means "cannot see a chain"
        first = (str(e).splitlines() or [""])[0]
        raise StrategyUnavailable(f"model_parallel cannot split {kind}: torch.fx cannot trace its forward() "
                                  f"({type(e).__name__}: {first})") from None
    steps: list[nn.Module] = []
    current: fx.Node | None = None
    for node in graph.nodes:
        if node.op == "output":
            if node.args[0] is not current:
                raise _not_a_chain(kind, "its output is not its last step")
            return steps
        problem = _step_problem(node, current)
        if problem:
            raise _not_a_chain(kind, problem)
        if node.op != "placeholder":
            steps.append(_layer(model, node))
        current = node
    raise _not_a_chain(kind, "its forward() has no output")


def _step_problem(node: fx.Node, current: fx.Node | None) -> str:
    """Why `node` does not continue the chain ending at `current` ("" when it does)."""
    if node.op == "placeholder":
        return "" if current is None else "it takes more than one input"
    if node.op == "get_attr":
        return f"it reads {node.target} outside its layers"
    if node.all_input_nodes != [current]:
        return f"{_name(node)} does not take just the previous step's output"
    if len(current.users) != 1:
        return f"the output of {_name(current)} is used more than once (a branch or skip connection)"
    if node.op == "call_module" and (len(node.args) != 1 or node.kwargs):
        return f"{node.target} is called with more than one argument"
    return ""


def _layer(model: nn.Module, node: fx.Node) -> nn.Module:
    if node.op == "call_module":
        return model.get_submodule(node.target)
    return Call(node.op, node.target, fx.node.map_arg(node.args, lambda _: INPUT),
                fx.node.map_arg(node.kwargs, lambda _: INPUT))


def _name(node: fx.Node) -> str:
    target = node.target
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


def _not_a_chain(kind: str, why: str) -> StrategyUnavailable:
    return StrategyUnavailable(f"model_parallel cannot split {kind}: its forward() is not a chain of "
                               f"layers ({why})")
