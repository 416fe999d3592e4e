// libFuzzer's driver entry point (https://llvm.org/docs/LibFuzzer.html#using-libfuzzer-as-a-library), declared for
// Swift. SwiftPM links executables with `main` renamed to `<target>_main`, so the fuzz build calls the driver from
// there instead of using libFuzzer's own `main`.
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));
