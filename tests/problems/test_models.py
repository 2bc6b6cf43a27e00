"""Tests of autoconv.problems.models (the model presets).

The ResNet-50 layer list is checked against the network rebuilt here from its
architecture with plain arithmetic, not against a copied table.
"""

from __future__ import annotations

from collections import Counter

import pytest

from autoconv.errors import ProblemError
from autoconv.problems.models import MODEL_PRESETS, NamedProblem, resnet50, vgg16
from autoconv.problems.problem import make_problem


def resnet50_convs_from_architecture(batch: int) -> list[tuple[str, tuple]]:
    """Every conv of torchvision's ResNet-50 (v1.5) in module order, rebuilt from the
    architecture with plain arithmetic: (name, (N, C, H, W, K, R, S, stride, pad))."""
    def out(size, kernel, stride, pad):
        return (size + 2 * pad - kernel) // stride + 1

    convs = [("conv1", (batch, 3, 224, 224, 64, 7, 7, 2, 3))]
    size = out(out(224, 7, 2, 3), 3, 2, 1)  # stem conv, then 3x3/2 max-pool: 56
    inplanes = 64
    for stage, (blocks, planes) in enumerate(zip([3, 4, 6, 3], [64, 128, 256, 512])):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            name = f"layer{stage + 1}.{block}"
            convs.append((f"{name}.conv1", (batch, inplanes, size, size, planes, 1, 1, 1, 0)))
            convs.append((f"{name}.conv2", (batch, planes, size, size, planes, 3, 3, stride, 1)))
            after = out(size, 3, stride, 1)
            convs.append((f"{name}.conv3", (batch, planes, after, after, planes * 4, 1, 1, 1, 0)))
            if block == 0:  # every stage's first block projects the shortcut
                convs.append((f"{name}.downsample.0", (batch, inplanes, size, size, planes * 4, 1, 1, stride, 0)))
            inplanes, size = planes * 4, after
    return convs


def test_resnet50_architecture_facts():
    convs = resnet50_convs_from_architecture(1)
    assert len(convs) == 53  # 1 stem + 16 bottlenecks x 3 + 4 projections
    assert len({shape for _, shape in convs}) == 23
    last = convs[-1][1]
    assert (last[4], (last[2] + 2 * last[8] - last[5]) // last[7] + 1) == (2048, 7)  # 7x7x2048 features


@pytest.mark.parametrize("batch", [1, 32])
def test_resnet50_preset_matches_the_architecture(batch):
    convs = resnet50_convs_from_architecture(batch)
    counts = Counter(shape for _, shape in convs)
    first_name = {}
    for name, shape in convs:
        first_name.setdefault(shape, name)
    expected = {first_name[shape]: (make_problem(N=n, C=c, H=h, W=w, K=k, R=r, S=s, stride=st_, padding=p),
                                    counts[shape])
                for shape, (n, c, h, w, k, r, s, st_, p) in ((sh, sh) for sh in counts)}
    layers = resnet50(batch)
    assert len(layers) == 23
    assert {layer.name: (layer.problem, layer.count) for layer in layers} == expected
    assert [layer.name for layer in layers] == [first_name[shape] for shape in counts]  # module order
    assert sum(layer.count for layer in layers) == 53


def test_resnet50_flops():
    # ResNet-50 is ~4.09 G multiply-adds per 224x224 image, 2.05 M of them in the final
    # fully connected layer (2048 x 1000): the convs are 4.087 G MACs = 8.17 GFLOP.
    total = sum(layer.problem.flops * layer.count for layer in resnet50(1))
    independent = sum(2 * n * k * ((h + 2 * p - r) // st_ + 1) * ((w + 2 * p - s) // st_ + 1) * c * r * s
                      for _, (n, c, h, w, k, r, s, st_, p) in resnet50_convs_from_architecture(1))
    assert total == independent == 8_174_272_512
    assert abs(total / 2 + 2048 * 1000 - 4.09e9) / 4.09e9 < 0.005
    assert sum(layer.problem.flops * layer.count for layer in resnet50(32)) == 32 * total


@pytest.mark.parametrize("batch", [0, -1, 1.0, True, "32"])
def test_resnet50_batch_must_be_a_positive_integer(batch):
    with pytest.raises(ProblemError, match="batch"):
        resnet50(batch)


def test_model_registry():
    assert MODEL_PRESETS == {"resnet50": resnet50, "vgg16": vgg16}
    assert isinstance(resnet50(2)[0], NamedProblem)
