"""The inline PTX of the tensor-core headers passes its registers in the order the emulator
models: a static check of what the CPU emulator cannot run.

Under the emulator each asm statement of templates/mma_tf32.cuh, templates/wgmma_tf32.cuh and
templates/wgmma_f16.cuh is replaced by a model (the ``#else`` half of each header), so a swapped
register in an asm operand list would pass every emulated test and compute garbage on the GPU. These tests tie
the two halves to one table, the PTX ISA's fragment layouts ("Matrix Fragments for
mma.m16n8k8", "Register Fragments and Shared Memory Matrix Layouts" of wgmma .m64nNk8, .tf32,
.f32 accumulators):

1. each asm statement's brace groups of registers name the fragment elements in order
   (d[0], d[1], ...), parsed from its PTX text and operand lists;
2. the model reads and writes those elements as the table says (parsed from its source);
3. nvcc compiles a probe kernel whose fragment elements come from distinct addresses, and the
   registers of the emitted mma / wgmma instruction trace back to those addresses in order.

Each is shown to fail on a planted swap. wgmma_f16.cuh's products read both operands through
descriptors, so only its D registers are a fragment: it has check 1 (and its layouts are checked
on the GPU in test_wgmma_f16.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

import pytest

from autoconv.kernels.resources import templates_dir

MMA = "mma_tf32.cuh"
WGMMA = "wgmma_tf32.cuh"
WGMMA_F16 = "wgmma_f16.cuh"
WGMMA_WIDTHS = (16, 32, 64, 104, 128, 192, 208, 224, 256)


def _source(name: str) -> str:
    return (templates_dir() / name).read_text()


def _gpu_half(text: str) -> str:
    """The part of a header compiled for the GPU (up to the emulator's ``#else``)."""
    return text[text.index("#ifndef AUTOCONV_EMULATOR"):text.index("#else  // the CPU emulator's model")]


def _model_half(text: str) -> str:
    return text[text.index("#else  // the CPU emulator's model"):]


# ---- 1. the asm statements' operand lists ------------------------------------------------------

@dataclass
class AsmStatement:
    function: str
    ptx: str               # the instruction text, string literals joined
    operands: list[str]    # operand i's expression, outputs then inputs (what %i names)
    constraints: list[str]


_OPERAND = re.compile(r'"([=+]?[a-z])"\s*\(((?:[^()]|\([^()]*\))*)\)')


def asm_statements(text: str) -> list[AsmStatement]:
    """The ``asm volatile(...)`` statements of the GPU half, with the function each is in."""
    gpu = _gpu_half(text)
    found = []
    for match in re.finditer(r"void\s+(\w+)\s*\((?:[^()]|\([^()]*\))*\)\s*\{\s*asm volatile\(", gpu):
        start = match.end()
        depth, end = 1, start
        while depth:
            depth += {"(": 1, ")": -1}.get(gpu[end], 0)
            end += 1
        found.append(_statement(match.group(1), gpu[start:end - 1]))
    return found


def _statement(function: str, body: str) -> AsmStatement:
    """The asm statement whose text after ``asm volatile(`` is ``body``, in ``function``."""
    parts = body.split(":")
    ptx = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', parts[0]))
    operands, constraints = [], []
    for part in parts[1:3]:
        for constraint, expression in _OPERAND.findall(part):
            constraints.append(constraint)
            operands.append(expression.strip())
    return AsmStatement(function, ptx, operands, constraints)


def _element(expression: str) -> str:
    """``__float_as_uint(a[2])`` -> ``a[2]``; ``static_cast<int>(accumulate)`` -> ``accumulate``."""
    indexed = re.findall(r"\b(\w+\[\d+\])", expression)
    if indexed:
        return indexed[-1]
    return re.findall(r"\b(\w+)\)*$", expression)[-1]


def _groups(ptx: str, instruction: str) -> list[list[int]]:
    """The register operands of ``instruction`` in ``ptx``: brace groups and single %i, as
    lists of operand numbers (a non-register operand, an immediate or a predicate, as [])."""
    body = ptx[ptx.index(instruction):].split(";")[0]
    arguments = body[len(instruction):].split(" ", 1)[1]
    groups = []
    for group in re.findall(r"\{([^}]*)\}|([^,{}]+)", arguments):
        text = group[0] or group[1]
        if text.strip():
            groups.append([int(n) for n in re.findall(r"%(\d+)", text)])
    return groups


def check_mma_asm(text: str) -> list[str]:
    """Problems with mma_m16n8k8's asm: its groups must be d[0..3], a[0..3], b[0..1], c[0..3]."""
    statements = {s.function: s for s in asm_statements(text)}
    if "mma_m16n8k8" not in statements:
        return ["no asm statement in mma_m16n8k8"]
    s = statements["mma_m16n8k8"]
    if "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" not in s.ptx:
        return [f"mma_m16n8k8 issues {s.ptx!r}, not mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"]
    groups = _groups(s.ptx, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
    expected = [[f"d[{i}]" for i in range(4)], [f"a[{i}]" for i in range(4)], [f"b[{i}]" for i in range(2)],
                [f"c[{i}]" for i in range(4)]]
    problems = []
    if len(groups) != 4:
        return [f"mma.sync has {len(groups)} operands, not 4 register groups"]
    for name, group, want in zip("DABC", groups, expected):
        got = [_element(s.operands[i]) for i in group]
        if got != want:
            problems.append(f"mma.sync operand {name}: registers {got}, the fragment order is {want}")
    for i, constraint in enumerate(s.constraints):
        if i < 4 and constraint != "=f":
            problems.append(f"operand %{i} ({s.operands[i]}): {constraint!r}, D is written ('=f')")
    return problems


def check_wgmma_asm(text: str, a_in_shared: bool = False) -> list[str]:
    """Problems with the asm of mma_m64n<N>k8: d[0..N/2), a[0..3], the descriptor b, and the
    predicate set from ``accumulate``; D read and written ('+f'). With ``a_in_shared``, of
    mma_ss_m64n<N>k8: the descriptor a in place of a[0..3]."""
    statements = {s.function: s for s in asm_statements(text)}
    problems = []
    for n in WGMMA_WIDTHS:
        function = f"mma_ss_m64n{n}k8" if a_in_shared else f"mma_m64n{n}k8"
        if function not in statements:
            problems.append(f"no asm statement in {function}")
            continue
        s = statements[function]
        instruction = f"wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32"
        if instruction not in s.ptx:
            problems.append(f"{function} does not issue {instruction}")
            continue
        groups = _groups(s.ptx, instruction)
        if len(groups) < 3:
            problems.append(f"{function}: {len(groups)} operands")
            continue
        d_group, a_group, b_group = groups[:3]
        if a_in_shared:
            problems += _descriptor_problems(function, s, "a", a_group)
        else:
            got_a = [_element(s.operands[i]) for i in a_group]
            if got_a != [f"a[{i}]" for i in range(4)]:
                problems.append(f"{function} operand A: registers {got_a}, the fragment order is a[0..3]")
        problems += _descriptor_problems(function, s, "b", b_group)
        problems += _accumulator_problems(function, s, n, d_group)
    return problems


def _descriptor_problems(function: str, s: AsmStatement, name: str, group: list[int]) -> list[str]:
    """An operand that must be the 64-bit descriptor variable ``name``."""
    if [_element(s.operands[i]) for i in group] != [name] or s.constraints[group[0]] != "l":
        return [f"{function} operand {name.upper()}: {[s.operands[i] for i in group]}, "
                f"not the 64-bit descriptor {name}"]
    return []


def _accumulator_problems(function: str, s: AsmStatement, n: int, d_group: list[int]) -> list[str]:
    """D must be d[0..n/2) in order, read and written ('+f'), and the predicate set from
    ``accumulate``."""
    problems = []
    got_d = [_element(s.operands[i]) for i in d_group]
    if got_d != [f"d[{i}]" for i in range(n // 2)]:
        problems.append(f"{function} operand D: registers {got_d}, the fragment order is d[0..{n // 2})")
    setp = re.search(r"setp\.ne\.b32 accumulate, %(\d+), 0;", s.ptx)
    if setp is None or _element(s.operands[int(setp.group(1))]) != "accumulate":
        problems.append(f"{function}: the accumulate predicate is not set from `accumulate`")
    if any(s.constraints[i] != "+f" for i in d_group):
        problems.append(f"{function}: D registers must be read and written ('+f')")
    return problems


def test_mma_sync_operands_are_in_fragment_order():
    assert check_mma_asm(_source(MMA)) == []


def test_wgmma_operands_are_in_fragment_order():
    assert check_wgmma_asm(_source(WGMMA)) == []


def _swap_once(text: str, first: str, second: str) -> str:
    """``text`` with the first occurrences of ``first`` and ``second`` in the GPU half swapped."""
    gpu = _gpu_half(text)
    i, j = gpu.index(first), gpu.index(second)
    assert i < j
    swapped = gpu[:i] + second + gpu[i + len(first):j] + first + gpu[j + len(second):]
    return text.replace(gpu, swapped)


@pytest.mark.parametrize("first, second", [
    ('__float_as_uint(a[1])', '__float_as_uint(a[2])'),   # A registers swapped
    ('__float_as_uint(b[0])', '__float_as_uint(b[1])'),   # B registers swapped
    ('"=f"(d[2])', '"=f"(d[3])'),                          # D registers swapped
    ('"f"(c[0])', '"f"(c[1])'),                            # C registers swapped
    ('{ %4, %5, %6, %7 }', '{ %8, %9 }'),                  # A and B groups swapped in the PTX
])
def test_a_swapped_mma_sync_operand_is_caught(first, second):
    assert check_mma_asm(_source(MMA)) == []
    problems = check_mma_asm(_swap_once(_source(MMA), first, second))
    assert problems and all("operand" in p for p in problems), problems


@pytest.mark.parametrize("first, second", [
    ('__float_as_uint(a[0])', '__float_as_uint(a[3])'),
    ('"+f"(d[4])', '"+f"(d[5])'),
    ('"{ %8, %9, %10, %11 }, "', '"%12, accumulate, 1, 1;\\n"'),
])
def test_a_swapped_wgmma_operand_is_caught(first, second):
    assert check_wgmma_asm(_source(WGMMA)) == []
    problems = check_wgmma_asm(_swap_once(_source(WGMMA), first, second))
    assert problems and all("operand" in p for p in problems), problems


def test_wgmma_with_a_in_shared_memory_passes_its_operands_in_order():
    assert check_wgmma_asm(_source(WGMMA), a_in_shared=True) == []


@pytest.mark.parametrize("first, second", [
    ('"%8, %9, accumulate, 1, 1;\\n"', '"{ %0, %1, %2, %3, %4, %5, %6, %7 }, "'),   # D and the descriptors
    (': "l"(a), "l"(b)', ': "l"(b), "l"(a)'),                                          # A and B descriptors
])
def test_a_swapped_wgmma_ss_operand_is_caught(first, second):
    text = _source(WGMMA)
    if first.startswith(": "):  # swap the two descriptors of the first SS statement only
        gpu = _gpu_half(text)
        start = gpu.index("mma_ss_m64n16k8")
        i = gpu.index(first, start)
        text = text.replace(gpu, gpu[:i] + second + gpu[i + len(first):])
    else:
        gpu = _gpu_half(text)
        start = gpu.index("void mma_ss_m64n16k8")
        i, j = gpu.index(second, start), gpu.index(first, start)
        text = text.replace(gpu, gpu[:i] + first + gpu[i + len(second):j] + second + gpu[j + len(first):])
    problems = check_wgmma_asm(text, a_in_shared=True)
    assert any("operand" in p for p in problems), problems


# wgmma_f16.cuh writes one asm statement per width as a macro of the PTX types (so each register
# list serves both formats); each is checked with the types of each format substituted.

def f16_asm_statements(text: str) -> list[AsmStatement]:
    """The asm statement of each ``AUTOCONV_WGMMA_SS_M64N<N>K16(TYPES)`` macro of the GPU half,
    once per format, as if in a function ``m64n<N>k16.<types>``."""
    found = []
    for width, body in re.findall(r"#define AUTOCONV_WGMMA_SS_M64N(\d+)K16\(TYPES\) \\\n(.*?)\n\n",
                                  _gpu_half(text), re.S):
        body = body.replace("\\\n", "\n")
        statement = body[body.index("asm volatile(") + len("asm volatile("):]
        found += [_statement(f"m64n{width}k16.{types}", statement.replace("TYPES", f'"{types}"'))
                  for types in ("bf16.bf16", "f16.f16")]
    return found


def check_wgmma_f16_asm(text: str) -> list[str]:
    """Problems with the asm of the 16-bit products, per width and format: d[0..N/2), then the
    descriptors a and b, the predicate set from ``accumulate``, scale 1 and no transpose of
    either operand (both K-major); D read and written ('+f')."""
    statements = {s.function: s for s in f16_asm_statements(text)}
    problems = []
    for n in WGMMA_WIDTHS:
        for types in ("bf16.bf16", "f16.f16"):
            function = f"m64n{n}k16.{types}"
            if function not in statements:
                problems.append(f"no asm statement for {function}")
                continue
            s = statements[function]
            instruction = f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{types}"
            if instruction not in s.ptx:
                problems.append(f"{function} does not issue {instruction}")
                continue
            groups = _groups(s.ptx, instruction)
            if len(groups) < 3:
                problems.append(f"{function}: {len(groups)} operands")
                continue
            d_group, a_group, b_group = groups[:3]
            problems += _descriptor_problems(function, s, "a", a_group)
            problems += _descriptor_problems(function, s, "b", b_group)
            problems += _accumulator_problems(function, s, n, d_group)
            if not s.ptx.split(instruction)[1].split(";")[0].endswith(", accumulate, 1, 1, 0, 0"):
                problems.append(f"{function}: not scale 1, 1 and transpose 0, 0 after the predicate")
    return problems


def test_wgmma_f16_operands_are_in_fragment_order():
    assert check_wgmma_f16_asm(_source(WGMMA_F16)) == []


@pytest.mark.parametrize("planted", [
    ('"+f"(d[1]), "+f"(d[2])', '"+f"(d[2]), "+f"(d[1])'),     # D registers swapped
    (': "l"(a), "l"(b)', ': "l"(b), "l"(a)'),                 # A and B descriptors swapped
    ("accumulate, 1, 1, 0, 0", "accumulate, 1, 1, 1, 0"),     # A read transposed (M-major)
])
def test_a_planted_wgmma_f16_mistake_is_caught(planted):
    """Each planted in the width-64 statement only: the check names that width's statements."""
    text = _source(WGMMA_F16)
    start = text.index("#define AUTOCONV_WGMMA_SS_M64N64K16")
    end = text.index("\n\n", start)
    wrong = text[start:end].replace(*planted)
    assert wrong != text[start:end]
    problems = check_wgmma_f16_asm(text[:start] + wrong + text[end:])
    assert problems and all(p.startswith("m64n64k16.") for p in problems), problems


# ---- 2. the models implement the PTX ISA's layout ------------------------------------------------

def _mma_layout():
    """PTX ISA, m16n8k8 .tf32 / .f32, lane (g, t): element i of each fragment -> (row, column)."""
    return {
        "a": [lambda g, t: (g, t), lambda g, t: (g + 8, t), lambda g, t: (g, t + 4), lambda g, t: (g + 8, t + 4)],
        "b": [lambda g, t: (t, g), lambda g, t: (t + 4, g)],
        "c": [lambda g, t: (g, 2 * t), lambda g, t: (g, 2 * t + 1), lambda g, t: (g + 8, 2 * t),
              lambda g, t: (g + 8, 2 * t + 1)],
    }


def _evaluate_index(expression: str, g: int, t: int) -> int:
    return int(eval(expression.replace(" ", ""), {"__builtins__": {}}, {"g": g, "t": t}))  # noqa: S307


def check_mma_model(text: str) -> list[str]:
    """The model's assembly of A, B, C from the lanes' fragments, and its rows/cols of D,
    against the table."""
    model = _model_half(text)
    problems = []
    assignments = re.findall(r"([ABC])\[([^\]]+)\]\[([^\]]+)\] = x\.([abc])\[l\]\[(\d)\];", model)
    layout = _mma_layout()
    seen = set()
    for matrix, row, column, fragment, index in assignments:
        seen.add((fragment, int(index)))
        for g in range(8):
            for t in range(4):
                want = layout[fragment][int(index)](g, t)
                got = (_evaluate_index(row, g, t), _evaluate_index(column, g, t))
                if matrix.lower() != fragment or got != want:
                    problems.append(f"model: {matrix}[{row}][{column}] = x.{fragment}[l][{index}]: lane ({g}, {t}) "
                                    f"element {index} is {fragment.upper()}{list(want)} in the PTX ISA")
                    break
            else:
                continue
            break
    missing = {(f, i) for f, elements in layout.items() for i in range(len(elements))} - seen
    if missing:
        problems.append(f"model: fragment elements never read: {sorted(missing)}")
    rows = re.search(r"const int rows\[4\] = \{([^}]*)\};", model)
    cols = re.search(r"const int cols\[4\] = \{([^}]*)\};", model)
    if rows is None or cols is None:
        return problems + ["model: the rows and cols of D not found"]
    for i, (row, column) in enumerate(zip(rows.group(1).split(","), cols.group(1).split(","))):
        for g in range(8):
            for t in range(4):
                if (_evaluate_index(row, g, t), _evaluate_index(column, g, t)) != layout["c"][i](g, t):
                    problems.append(f"model: d[{i}] is D[{row.strip()}][{column.strip()}], the PTX ISA says "
                                    f"C/D {list(layout['c'][i](g, t))} for lane ({g}, {t})")
                    break
            else:
                continue
            break
    return problems


def check_wgmma_model(text: str) -> list[str]:
    """The wgmma model: lane l's A elements by the m16n8k8 A table (rows g, g+8 of the warp's
    16), and d[4j+e] = D[g + 8*(e/2)][8j + 2t + e%2]."""
    model = _model_half(text)
    problems = []
    a_table = _mma_layout()["a"]
    assignments = re.findall(r"p\.a_rows\[(\d)\]\[([^\]]+)\] = x\.a\[l\]\[(\d)\];", model)
    if len(assignments) != 4:
        problems.append(f"model: {len(assignments)} A assignments found, not 4")
    for half, column, index in assignments:
        for t in range(4):
            row, col = a_table[int(index)](0, t)  # g = 0: row 0 or 8 of the warp's 16
            if (int(half) * 8, _evaluate_index(column, 0, t)) != (row, col):
                problems.append(f"model: a_rows[{half}][{column}] = x.a[l][{index}], the PTX ISA says "
                                f"A[g+{row}][{col}] for t = {t}")
                break
    body = model[model.index("inline void apply"):model.index("inline void issue")]
    if not re.search(r"p\.a_rows\[e / 2\]", body) or "8 * j + 2 * t + e % 2" not in body \
            or "p.d[4 * j + e]" not in body:
        problems.append("model: apply() does not update d[4j+e] = D[g+8(e/2)][8j+2t+e%2]")
    return problems


def test_mma_model_implements_the_ptx_fragment_layout():
    assert check_mma_model(_source(MMA)) == []


def test_wgmma_model_implements_the_ptx_fragment_layout():
    assert check_wgmma_model(_source(WGMMA)) == []


def test_a_swapped_register_in_a_model_is_caught():
    text = _source(MMA)
    model = _model_half(text)
    broken = model.replace("A[g + 8][t] = x.a[l][1];", "A[g + 8][t] = x.a[l][2];", 1).replace(
        "A[g][t + 4] = x.a[l][2];", "A[g][t + 4] = x.a[l][1];", 1)
    assert check_mma_model(text.replace(model, broken))
    text = _source(WGMMA)
    model = _model_half(text)
    broken = model.replace("p.a_rows[1][t] = x.a[l][1];", "p.a_rows[1][t] = x.a[l][2];", 1).replace(
        "p.a_rows[0][t + 4] = x.a[l][2];", "p.a_rows[0][t + 4] = x.a[l][1];", 1)
    assert check_wgmma_model(text.replace(model, broken))


# ---- 3. what nvcc emits ------------------------------------------------------------------------

_NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(_NVCC is None, reason="nvcc is not on PATH")

_MMA_PROBE = """#include "mma_tf32.cuh"
extern "C" __global__ void probe(const float* in, float* out)
{
    float a[4], b[2], c[4], d[4];
    for (int i = 0; i < 4; ++i) a[i] = in[i];
    for (int i = 0; i < 2; ++i) b[i] = in[4 + i];
    for (int i = 0; i < 4; ++i) c[i] = in[6 + i];
    mma_tf32::mma_m16n8k8(d, a, b, c);
    for (int i = 0; i < 4; ++i) out[i] = d[i];
}
"""

_WGMMA_PROBE = """#include "wgmma_tf32.cuh"
extern "C" __global__ void probe(const float* in, const unsigned long long* descriptor, float* out, int accumulate)
{
    float a[4], d[WIDTH / 2];
    for (int i = 0; i < 4; ++i) a[i] = in[i];
    for (int i = 0; i < WIDTH / 2; ++i) d[i] = in[4 + i];
    wgmma_tf32::mma_m64nNk8<WIDTH>(d, a, descriptor[0], accumulate != 0);
    for (int i = 0; i < WIDTH / 2; ++i) out[i] = d[i];
}
"""


def _compile_ptx(tmp_path, header: str, text: str, probe: str, arch: str, defines=()) -> str:
    (tmp_path / header).write_text(text)
    (tmp_path / "probe.cu").write_text(probe)
    result = subprocess.run([_NVCC, f"-arch={arch}", "-ptx", "-I", str(tmp_path), *defines, "probe.cu", "-o",
                             "probe.ptx"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return (tmp_path / "probe.ptx").read_text()


def _trace(ptx: str, instruction: str) -> tuple[list[list[str]], dict[str, int], dict[str, int]]:
    """The register groups of ``instruction``, and for each register the byte offset it was
    loaded from (the probe's ``in``, following movs) and the offset it is stored to (``out``)."""
    loaded: dict[str, int] = {}
    stored: dict[str, int] = {}
    for line in ptx.splitlines():
        load = re.match(r"\s*ld\.global(?:\.\w+)*\s+(%\w+),\s*\[%\w+(?:\+(\d+))?\];", line)
        if load:
            loaded[load.group(1)] = int(load.group(2) or 0)
        move = re.match(r"\s*mov\.b(?:32|64)\s+(%\w+),\s*(%\w+);", line)
        if move and move.group(2) in loaded:
            loaded[move.group(1)] = loaded[move.group(2)]
        store = re.match(r"\s*st\.global(?:\.\w+)*\s+\[%\w+(?:\+(\d+))?\],\s*(%\w+);", line)
        if store:
            stored[store.group(2)] = int(store.group(1) or 0)
    lines = [line for line in ptx.splitlines() if instruction in line]
    assert len(lines) == 1, f"{len(lines)} {instruction} instructions in the probe's PTX"
    arguments = lines[0].split(instruction, 1)[1].split(";")[0]
    groups = [re.findall(r"%\w+", group[0] or group[1])
              for group in re.findall(r"\{([^}]*)\}|([^,{}]+)", arguments) if (group[0] or group[1]).strip()]
    return groups, loaded, stored


def check_mma_ptx(ptx: str) -> list[str]:
    groups, loaded, stored = _trace(ptx, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
    problems = []
    want = {"A": [0, 4, 8, 12], "B": [16, 20], "C": [24, 28, 32, 36]}
    for name, group in zip("ABC", groups[1:4]):
        if [loaded.get(r) for r in group] != want[name]:
            problems.append(f"mma.sync {name}: registers {group} hold in[{[loaded.get(r) for r in group]}] (bytes), "
                            f"the fragment order is {want[name]}")
    if [stored.get(r) for r in groups[0]] != [0, 4, 8, 12]:
        problems.append(f"mma.sync D: registers {groups[0]} are stored to out{[stored.get(r) for r in groups[0]]}")
    return problems


def check_wgmma_ptx(ptx: str, n: int) -> list[str]:
    groups, loaded, stored = _trace(ptx, f"wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32")
    problems = []
    d, a, b = groups[:3]
    if [loaded.get(r) for r in a] != [0, 4, 8, 12]:
        problems.append(f"wgmma A: registers {a} hold in{[loaded.get(r) for r in a]}, the order is [0, 4, 8, 12]")
    if [loaded.get(r) for r in d] != [16 + 4 * i for i in range(n // 2)] or \
            [stored.get(r) for r in d] != [4 * i for i in range(n // 2)]:
        problems.append(f"wgmma D: registers {d} are not d[0..{n // 2}) in order")
    if len(b) != 1 or not b[0].startswith("%rd"):
        problems.append(f"wgmma B: {b}, not the 64-bit descriptor")
    return problems


@needs_nvcc
def test_nvcc_emits_mma_sync_with_the_fragments_in_order(tmp_path):
    assert check_mma_ptx(_compile_ptx(tmp_path, MMA, _source(MMA), _MMA_PROBE, "sm_80")) == []


@needs_nvcc
@pytest.mark.parametrize("n", WGMMA_WIDTHS)
def test_nvcc_emits_wgmma_with_the_fragments_in_order(tmp_path, n):
    ptx = _compile_ptx(tmp_path, WGMMA, _source(WGMMA), _WGMMA_PROBE, "sm_90a", [f"-DWIDTH={n}"])
    assert check_wgmma_ptx(ptx, n) == []


@needs_nvcc
def test_nvcc_check_catches_a_swapped_operand(tmp_path):
    broken = _swap_once(_source(MMA), "__float_as_uint(a[1])", "__float_as_uint(a[2])")
    assert check_mma_ptx(_compile_ptx(tmp_path, MMA, broken, _MMA_PROBE, "sm_80"))
    broken = _swap_once(_source(MMA), '"=f"(d[0])', '"=f"(d[1])')
    assert check_mma_ptx(_compile_ptx(tmp_path, MMA, broken, _MMA_PROBE, "sm_80"))
    broken = _swap_once(_source(WGMMA), '"+f"(d[4])', '"+f"(d[5])')  # in mma_m64n16k8
    assert check_wgmma_ptx(_compile_ptx(tmp_path, WGMMA, broken, _WGMMA_PROBE, "sm_90a", ["-DWIDTH=16"]), 16)
    broken = _swap_once(_source(WGMMA), "__float_as_uint(a[0])", "__float_as_uint(a[1])")
    assert check_wgmma_ptx(_compile_ptx(tmp_path, WGMMA, broken, _WGMMA_PROBE, "sm_90a", ["-DWIDTH=16"]), 16)
