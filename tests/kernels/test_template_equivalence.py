"""Template refactors that must not change behaviour: the rendered plans of a saved corpus against
the ones the templates render now.

Before changing templates, save a corpus of plans (sources, launches, workspace) rendered by the
current code::

    PYTHONPATH=$PWD python tests/kernels/test_template_equivalence.py save /tmp/corpus

After the change, compare::

    AUTOCONV_TEMPLATE_CORPUS=/tmp/corpus pytest tests/kernels/test_template_equivalence.py

The corpus holds, for every family and a set of awkward problems (odd C, non-square filters and
strides, asymmetric padding, dilation, batch 1, 1x1), the default config, up to two configs per
code path (each combination of the values that select code: string parameters, SPLIT_K and
MIN_BLOCKS 1 or more, bias, vector widths) and a few random ones. Kernel names, launches and
workspace bytes must be identical; a source must be byte-identical or have the same C++ tokens
(comments and whitespace aside). Where the tokens differ, the test compiles both sources with
nvcc (sm_90a, as the wgmma kernels need) for up to AUTOCONV_TEMPLATE_CORPUS_COMPILE plans per
family (default 10, spread over the corpus) and requires identical code sections (.text) of
every kernel. Without
AUTOCONV_TEMPLATE_CORPUS the test is skipped: it compares with a snapshot, not with a fixed truth.
"""

from __future__ import annotations

import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autoconv.kernels.families import all_families, get_family
from autoconv.kernels.limits import H100
from autoconv.kernels.nvcc import find_nvcc
from autoconv.problems.problem import parse_spec

CORPUS_PROBLEMS = (
    "N=2,C=13,H=31,W=29,K=17,R=3,S=3,stride=2x1,pad=1",
    "N=1,C=1,H=9,W=40,K=3,R=1,S=7,pad=0:0:3:3,bias=1",
    "N=2,C=5,H=12,W=7,K=130,R=7,S=1,stride=1x2,pad=3:2:0:1,dilation=2x1,bias=1",
    "N=1,C=64,H=14,W=14,K=129,R=3,S=3,pad=3,dilation=3,bias=1",
    "N=4,C=256,H=7,W=7,K=100,R=1,S=1",
    "N=2,C=32,H=16,W=16,K=64,R=3,S=3,pad=1,bias=1",
    "N=1,C=64,H=8,W=8,K=96,R=1,S=1,bias=1",
    "N=1,C=128,H=7,W=7,K=64,R=3,S=3,pad=1",
    "N=2,C=7,H=9,W=33,K=9,R=3,S=2,stride=1x3,pad=2:0:1:0,dilation=2x3",
    "N=3,C=64,H=11,W=13,K=40,R=5,S=3,stride=2,pad=2:1:1:0,bias=1",
)
#: Derived values that select code in the templates.
SWITCH_VALUES = ("OUT_VEC", "B_VEC", "A_VEC", "FRAG_M", "FRAG_N", "WEIGHT_VEC", "TILES_IN_FLIGHT", "B_PLANES")
CORPUS_FILE = "corpus.jsonl"

_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\w+|\S')
_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"', re.S)


def code_path(family, problem, config) -> tuple:
    values = family.space.context(config, problem, H100)
    path = [("HAS_BIAS", values["HAS_BIAS"])]
    for name, value in config.items():
        if isinstance(value, str) or name == "WGN":
            path.append((name, value))
        elif name in ("SPLIT_K", "MIN_BLOCKS"):
            path.append((f"{name} > 1", value > 1))
    path += [(name, values[name]) for name in SWITCH_VALUES if name in values]
    return tuple(path)


def sample_corpus(seed: int = 1234, per_path: int = 2, extra: int = 8) -> list[tuple]:
    """(family, problem spec, config) for every family and problem, in a fixed order."""
    rng = random.Random(seed)
    chosen = []
    for family in all_families():
        for spec in CORPUS_PROBLEMS:
            problem = parse_spec(spec)
            points = family.space.points(problem, H100)
            if not points:
                continue
            paths: dict[tuple, list] = {}
            for config in points:
                paths.setdefault(code_path(family, problem, config), []).append(config)
            configs = [family.space.default_config(problem, H100)]
            for path in sorted(paths, key=repr):
                configs += rng.sample(paths[path], min(per_path, len(paths[path])))
            configs += rng.sample(points, min(extra, len(points)))
            seen = set()
            for config in configs:
                key = json.dumps(config, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    chosen.append((family, spec, config))
    return chosen


def record(family, spec: str, config) -> dict:
    plan = family.plan(parse_spec(spec), config)
    return {"family": family.name, "problem": spec, "config": dict(config), "name": plan.name,
            "source": plan.source, "workspace_bytes": plan.workspace_bytes,
            "launches": [[launch.kernel, list(launch.grid), list(launch.block), list(launch.args),
                          launch.shared_bytes] for launch in plan.launches]}


def tokens(source: str) -> list[str]:
    """The C++ tokens of a source, comments left out (string literals kept whole)."""
    code = _COMMENT_OR_STRING.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", source)
    return _TOKEN.findall(code)


def code_sections(source: str, nvcc: str, folder: Path, stem: str) -> dict[str, bytes]:
    """The .text section of every kernel of the source compiled for sm_90a."""
    cu, cubin = folder / f"{stem}.cu", folder / f"{stem}.cubin"
    cu.write_text(source)
    subprocess.run([nvcc, "-cubin", "-arch=sm_90a", "-o", str(cubin), str(cu)], check=True,
                   capture_output=True, text=True)
    data = cubin.read_bytes()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    entry_size, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * entry_size) for i in range(count)]
    names_at = headers[names_index][4]
    sections = {}
    for name, _, _, _, offset, size in headers:
        end = data.index(b"\0", names_at + name)
        section = data[names_at + name:end].decode()
        if section.startswith(".text."):
            sections[section] = data[offset:offset + size]
    return sections


def test_renders_match_the_saved_corpus():
    folder = os.environ.get("AUTOCONV_TEMPLATE_CORPUS")
    if not folder:
        pytest.skip("no saved corpus: set AUTOCONV_TEMPLATE_CORPUS (see the module's docstring)")
    saved = [json.loads(line) for line in (Path(folder) / CORPUS_FILE).read_text().splitlines()]
    assert saved
    compile_per_family = int(os.environ.get("AUTOCONV_TEMPLATE_CORPUS_COMPILE", "10"))
    to_compile: dict[str, list] = {}
    for old in saved:
        new = record(get_family(old["family"]), old["problem"], old["config"])
        for key in ("name", "launches", "workspace_bytes"):
            assert new[key] == old[key], f"{old['name']}: {key} changed"
        if new["source"] != old["source"] and tokens(new["source"]) != tokens(old["source"]):
            to_compile.setdefault(old["family"], []).append((old, new))
    if not to_compile:
        return
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.fail(f"sources differ in code ({sorted(to_compile)}) and nvcc is absent to compare cubins")
    with tempfile.TemporaryDirectory(prefix="autoconv-equivalence-") as tmp:
        for pairs in (to_compile[family] for family in sorted(to_compile)):
            for old, new in pairs[::max(1, len(pairs) // compile_per_family)][:compile_per_family]:
                before = code_sections(old["source"], nvcc, Path(tmp), "before")
                after = code_sections(new["source"], nvcc, Path(tmp), "after")
                assert before == after, f"{old['name']}: the compiled kernels differ"


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] != "save":
        print(__doc__)
        return 2
    folder = Path(argv[2])
    folder.mkdir(parents=True, exist_ok=True)
    corpus = sample_corpus()
    with open(folder / CORPUS_FILE, "w") as out:
        for family, spec, config in corpus:
            out.write(json.dumps(record(family, spec, config)) + "\n")
    print(f"{len(corpus)} plans saved in {folder / CORPUS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
