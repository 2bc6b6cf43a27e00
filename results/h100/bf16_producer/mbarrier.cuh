// SCRATCH (replaced by the helper's header at merge): mbarrier PTX only, for nvcc checks.
#ifndef AUTOCONV_MBARRIER_CUH
#define AUTOCONV_MBARRIER_CUH
namespace mbarrier {
__device__ __forceinline__ unsigned address(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void init(unsigned long long* b, unsigned count)
{ asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(address(b)), "r"(count) : "memory"); }
__device__ __forceinline__ void arrive(unsigned long long* b)
{ asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(address(b)) : "memory"); }
__device__ __forceinline__ void arrive_when_copies_land(unsigned long long* b)
{ asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" :: "r"(address(b)) : "memory"); }
__device__ __forceinline__ void wait(unsigned long long* b, unsigned parity)
{
    asm volatile("{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT_%=;\n}\n"
                 :: "r"(address(b)), "r"(parity) : "memory");
}
}
#endif
