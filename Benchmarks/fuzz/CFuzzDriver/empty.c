// Only the header matters: the symbol comes from libFuzzer in the fuzz build.
