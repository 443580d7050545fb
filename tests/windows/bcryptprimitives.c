/* A stand-in for Windows' bcryptprimitives.dll, for running the Windows binaries under Wine 8,
 * which lacks it: Rust's standard library loads ProcessPrng from it for its random numbers
 * (hash map seeds), so without it every Rust program aborts at start. This one answers with
 * RtlGenRandom (advapi32's SystemFunction036), the system's own random source under Wine.
 * Built by tests/windows/smoke.sh with mingw and put beside the .exe files; never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
