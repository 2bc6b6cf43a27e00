"""Why a kernel could not be emulated. Each error carries the tool output that says so."""

from __future__ import annotations

import re

from autoconv.errors import AutoconvError, BackendUnavailable

_UNMODELLED = re.compile(r"autoconv emulator: (\S+) \([^)]*\) is not modelled")
_VERDICT = re.compile(r"ERROR: AddressSanitizer|runtime error:|autoconv emulator:|^SUMMARY:|: error:|"
                      r"undefined reference")


class EmulationError(AutoconvError):
    """A kernel could not be emulated, or faulted while emulated.

    ``headline`` says what failed; ``output`` is the compiler's or the emulated program's
    output (sanitizer reports included), verbatim.
    """

    def __init__(self, message: str, output: str = ""):
        self.headline = message
        self.output = output
        super().__init__(message + (f"\n{output.rstrip()}" if output.strip() else ""))

    @property
    def summary(self) -> str:
        """The headline and the few lines of ``output`` that say what went wrong: compiler
        errors, sanitizer verdicts, the emulator's own messages."""
        lines = [line.strip() for line in self.output.splitlines() if _VERDICT.search(line)]
        return "\n".join([self.headline, *list(dict.fromkeys(lines))[:6]])


class EmulatorUnavailable(EmulationError, BackendUnavailable):
    """No working host compiler with AddressSanitizer on this machine."""


class EmulatorCompileError(EmulationError):
    """The kernel source does not compile for the emulator.

    ``unmodelled`` names the CUDA features the source uses that the emulator does not
    model (empty when the error is something else).
    """

    def __init__(self, message: str, output: str = ""):
        self.unmodelled = tuple(dict.fromkeys(_UNMODELLED.findall(output)))
        if self.unmodelled:
            message += (f" (it uses {', '.join(self.unmodelled)}, which the CPU emulator does not model)")
        super().__init__(message, output)


class EmulatedKernelFault(EmulationError):
    """An emulated kernel crashed: an AddressSanitizer or UBSan report (out-of-bounds or
    misaligned access...), a fault the emulator detected, or a launch the GPU would refuse."""


class EmulationTimeout(EmulatedKernelFault):
    """An emulated program ran past its time limit (a kernel that never returns?)."""
