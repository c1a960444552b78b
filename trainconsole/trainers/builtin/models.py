"""Models: a small CNN, any torchvision classifier by name, and `package.module:factory` plug-ins.

Transfer learning: `model.weights` loads a local state_dict or checkpoint, the classification head is
replaced for `num_classes`, and `model.freeze_backbone` leaves only the head trainable.
"""

from __future__ import annotations

import itertools

import torch
from torch import nn

from trainconsole.protocol import Config

from .. import checkpoint, plugins
from ..errors import CheckpointError, ShapeError

AUX_HEAD_MODELS = ("googlenet", "inception_v3")  # their auxiliary heads would change the output type


def build(config: Config, num_classes: int, input_shape: tuple[int, ...]) -> nn.Module:
    """The model named by `model.name`, with weights loaded, head fitted and backbone frozen as asked."""
    spec = config["model"]
    name = spec["name"]
    if name == "small_cnn" or ":" in name:
        model = small_cnn(input_shape, num_classes) if name == "small_cnn" else _plugin(config, num_classes,
                                                                                       input_shape)
        if spec["weights"]:
            load_weights(model, spec["weights"])
    else:  # torchvision: weights come with a head of their own size, replaced after loading
        model = torchvision_model(name, num_classes, spec["weights"])
    if spec["freeze_backbone"]:
        freeze_backbone(model)
    return model


def _plugin(config: Config, num_classes: int, input_shape: tuple[int, ...]) -> nn.Module:
    model = plugins.factory(config["model"]["name"])(config, num_classes, input_shape)
    if not isinstance(model, nn.Module):
        raise TypeError(f"model factory {config['model']['name']} returned {type(model).__name__}, "
                        "not a torch.nn.Module")
    return model


def small_cnn(input_shape: tuple[int, ...], num_classes: int) -> nn.Sequential:
    """2 conv + 2 fc layers, sized for any C×H×W input; a flat Sequential so it splits into stages."""
    if len(input_shape) != 3:
        raise ShapeError(f"small_cnn takes images of shape [C, H, W]; the data's samples have shape "
                         f"{list(input_shape)}", f"the data's samples have shape {list(input_shape)}, "
                         "small_cnn wants images [C, H, W]: for flat features use a plug-in model "
                         "(model.name = 'package.module:factory', e.g. an nn.Sequential of nn.Linear "
                         "layers), or pick data of images")
    channels = input_shape[0]
    features = nn.Sequential(
        nn.Conv2d(channels, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True),
        nn.Flatten(),
    )
    with torch.no_grad():  # ceil_mode pooling keeps tiny inputs valid; measure the flat size
        flat = features(torch.zeros(1, *input_shape)).shape[1]
    return nn.Sequential(*features, nn.Linear(flat, 128), nn.ReLU(), nn.Linear(128, num_classes))


def torchvision_model(name: str, num_classes: int, weights: str = "") -> nn.Module:
    """A torchvision classifier with random weights, or with local `weights` and a new head."""
    from torchvision import models  # lazily: torchvision costs seconds to import

    extra = {"aux_logits": False, "init_weights": True} if name in AUX_HEAD_MODELS else {}
    if not weights:
        return models.get_model(name, weights=None, num_classes=num_classes, **extra)
    model = models.get_model(name, weights=None, **extra)
    load_weights(model, weights)
    replace_head(model, num_classes)
    return model


def load_weights(model: nn.Module, path: str) -> None:
    """Load a local state_dict/checkpoint; a head of another size is left out (it gets replaced)."""
    state = checkpoint.load_model_weights(path)
    own = model.state_dict()
    fitting = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    missing = [k for k in own if k not in fitting]
    head = set(_head_param_names(model))
    if [k for k in missing if k not in head and not _is_buffer_stat(k)]:
        shown = ", ".join(missing[:3])
        raise CheckpointError(f"model.weights = {path!r} does not fit this model: {len(missing)} "
                              f"parameters missing or of another shape (e.g. {shown})")
    model.load_state_dict(fitting, strict=False)


def _is_buffer_stat(key: str) -> bool:
    return key.endswith("num_batches_tracked")


def find_head(model: nn.Module) -> tuple[nn.Module, str, nn.Module]:
    """(parent, attribute, layer) of the classification head: the last Linear, else a last 1×1 conv."""
    linear = conv = None
    for parent in model.modules():
        for attr, child in parent.named_children():
            if isinstance(child, nn.Linear):
                linear = (parent, attr, child)
            elif isinstance(child, nn.Conv2d) and child.kernel_size == (1, 1):
                conv = (parent, attr, child)
    if linear is None and conv is None:
        raise ValueError(f"cannot find a classification head (nn.Linear) in {type(model).__name__}")
    return linear or conv  # type: ignore[return-value]


def _head_param_names(model: nn.Module) -> list[str]:
    _, _, head = find_head(model)
    ids = {id(p) for p in head.parameters()}
    return [name for name, p in model.named_parameters() if id(p) in ids]


def replace_head(model: nn.Module, num_classes: int) -> nn.Module:
    """Swap the head for one with `num_classes` outputs (resnet .fc, vgg .classifier[-1], vit .heads.head)."""
    parent, attr, head = find_head(model)
    if isinstance(head, nn.Linear):
        if head.out_features != num_classes:
            setattr(parent, attr, nn.Linear(head.in_features, num_classes, bias=head.bias is not None))
    elif head.out_channels != num_classes:  # squeezenet: a 1×1 conv classifier
        setattr(parent, attr, nn.Conv2d(head.in_channels, num_classes, 1))
    return model


def freeze_backbone(model: nn.Module) -> None:
    """Train only the head: every other parameter gets requires_grad = False."""
    head = {id(p) for p in find_head(model)[2].parameters()}
    for p in model.parameters():
        p.requires_grad_(id(p) in head)


def has_lazy(model: nn.Module) -> bool:
    """True while some parameter or buffer of a lazy module (nn.LazyLinear, ...) has no shape yet."""
    from torch.nn.parameter import is_lazy

    return any(is_lazy(t) for t in itertools.chain(model.parameters(), model.buffers()))


def materialise(model: nn.Module, sample: torch.Tensor) -> nn.Module:
    """Give lazy modules their shapes with one forward of `sample` (one input, batch of 1) on its device.

    Runs in eval mode without grad, so BatchNorm statistics and autograd are untouched; parameters must
    exist before they are counted, wrapped (DDP, DataParallel) or split into stages.
    """
    if not has_lazy(model):
        return model
    model = model.to(sample.device)
    was_training = model.training
    with torch.no_grad():
        model.eval()(sample.unsqueeze(0))
    return model.train(was_training)


def count_params(model: nn.Module) -> tuple[int, int]:
    """(all parameters, trainable parameters)."""
    params = list(model.parameters())
    return sum(p.numel() for p in params), sum(p.numel() for p in params if p.requires_grad)
