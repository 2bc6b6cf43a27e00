"""Model presets: the convolution layers of well-known networks, as tuning problems.

A preset turns a network and a batch size into its *unique* conv layers, each with the
number of times it occurs, so that a config can say ``models: [{preset: resnet50,
batch: 32}]`` instead of listing 53 layers by hand. Identical layers are tuned once;
the count lets reports weigh each layer by its share of the network's time.

Layers are derived from the architecture (not copied from a table), so the list is
exactly what torchvision's model runs, and each unique layer is named after its first
occurrence in torchvision's module order (``conv1``, ``layer1.0.conv1``, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from autoconv.errors import ProblemError
from autoconv.problems.problem import ConvProblem, make_problem

#: Most times one layer may occur. A network repeats a layer a few dozen times at most (ResNet-152's
#: third stage, 36 blocks); a count beyond this is a slip, which would swamp the reports' weighting.
MAX_COUNT = 1_000_000
#: Why a count is bounded, for messages.
COUNT_LIMIT_WHY = (f"the times the layer occurs in the network, which weigh the reports; no network repeats a "
                   f"layer more than {MAX_COUNT} times")


@dataclass(frozen=True)
class NamedProblem:
    """A problem to tune, its name (unique in a config) and how often it occurs.

    Raises:
        ProblemError: ``count`` is not an integer from 1 to :data:`MAX_COUNT`.
    """

    name: str
    problem: ConvProblem
    count: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ProblemError("count", self.count, "must be an integer >= 1")
        if self.count > MAX_COUNT:
            raise ProblemError("count", self.count, f"must be <= {MAX_COUNT} ({COUNT_LIMIT_WHY})")


def _check_batch(batch) -> int:
    if isinstance(batch, bool) or not isinstance(batch, int):
        raise ProblemError("batch", batch, "must be a positive integer")
    if batch < 1:
        raise ProblemError("batch", batch, "must be >= 1")
    return batch


def _bottleneck_resnet_convs(batch: int, blocks: tuple[int, ...], image: int = 224,
                             ) -> Iterator[tuple[str, ConvProblem]]:
    """Every conv of a bottleneck ResNet (torchvision's ResNet-50/101/152, v1.5), in
    module order, with torchvision's module names.

    The stem is a 7x7 stride-2 conv (padding 3) and a 3x3 stride-2 max-pool (padding 1).
    Stage ``i`` has ``blocks[i]`` bottlenecks of width ``64 * 2**i``: 1x1 reduce, 3x3
    (carrying the stage's stride 2 after the first stage: "v1.5"), 1x1 expand to
    4x the width. The first block of a stage whose stride or channel count changes adds
    a 1x1 projection ``downsample.0`` with the same stride.
    """
    expansion = 4
    stem = make_problem(N=batch, C=3, H=image, W=image, K=64, R=7, S=7, stride=2, padding=3)
    yield "conv1", stem
    size = (stem.P + 2 * 1 - 3) // 2 + 1  # the max-pool after the stem
    channels = 64
    for stage, count in enumerate(blocks):
        width = 64 * 2**stage
        for block in range(count):
            stride = 2 if (stage > 0 and block == 0) else 1
            prefix = f"layer{stage + 1}.{block}"
            reduce = make_problem(N=batch, C=channels, H=size, W=size, K=width, R=1, S=1)
            spatial = make_problem(N=batch, C=width, H=size, W=size, K=width, R=3, S=3,
                                   stride=stride, padding=1)
            out_size = spatial.P
            expand = make_problem(N=batch, C=width, H=out_size, W=out_size,
                                  K=width * expansion, R=1, S=1)
            yield f"{prefix}.conv1", reduce
            yield f"{prefix}.conv2", spatial
            yield f"{prefix}.conv3", expand
            if stride != 1 or channels != width * expansion:
                yield f"{prefix}.downsample.0", make_problem(
                    N=batch, C=channels, H=size, W=size, K=width * expansion, R=1, S=1,
                    stride=stride)
            channels, size = width * expansion, out_size


def merge_identical(problems: Iterable[NamedProblem]) -> tuple[NamedProblem, ...]:
    """Identical problems as one, in first-seen order: the first name, the counts added."""
    merged: dict[ConvProblem, NamedProblem] = {}
    for item in problems:
        first = merged.get(item.problem)
        merged[item.problem] = item if first is None else NamedProblem(first.name, first.problem,
                                                                         first.count + item.count)
    return tuple(merged.values())


def unique_layers(layers: Iterator[tuple[str, ConvProblem]]) -> tuple[NamedProblem, ...]:
    """Merge identical problems, keeping the first name and counting occurrences."""
    return merge_identical(NamedProblem(name, problem) for name, problem in layers)


def resnet50(batch: int = 1) -> tuple[NamedProblem, ...]:
    """The 23 unique conv layers of torchvision's ResNet-50 (v1.5) at 224x224, with
    their occurrence counts (53 convs in all).

    Raises:
        ProblemError: ``batch`` is not a positive integer (or too large for 32-bit indexing).
    """
    return unique_layers(_bottleneck_resnet_convs(_check_batch(batch), (3, 4, 6, 3)))


#: VGG-16's feature extractor (configuration "D"): output channels of each 3x3 conv, "M" a
#: 2x2 stride-2 max-pool.
_VGG16_FEATURES = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")


def _vgg_convs(batch: int, features: tuple, image: int = 224) -> Iterator[tuple[str, ConvProblem]]:
    """Every conv of a torchvision VGG (without batch norm), in module order, named as
    torchvision names them (``features.<index>``: each conv is followed by a ReLU, so
    indices skip the ReLUs and pools). Each conv is 3x3, stride 1, padding 1, with bias."""
    channels, size, index = 3, image, 0
    for item in features:
        if item == "M":
            size //= 2
            index += 1
            continue
        yield f"features.{index}", make_problem(N=batch, C=channels, H=size, W=size, K=item, R=3, S=3,
                                                padding=1, bias=True)
        channels = item
        index += 2  # the conv and its ReLU


def vgg16(batch: int = 1) -> tuple[NamedProblem, ...]:
    """The 9 unique conv layers of torchvision's VGG-16 at 224x224, with their occurrence
    counts (13 convs in all).

    Raises:
        ProblemError: ``batch`` is not a positive integer (or too large for 32-bit indexing).
    """
    return unique_layers(_vgg_convs(_check_batch(batch), _VGG16_FEATURES))


#: Presets a config's ``models:`` entries may name.
MODEL_PRESETS: dict[str, Callable[[int], tuple[NamedProblem, ...]]] = {"resnet50": resnet50, "vgg16": vgg16}
