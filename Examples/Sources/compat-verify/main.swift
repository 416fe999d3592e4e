// Filled in by the compatibility suite.
print("compat-verify: not built yet")
