module pinninglab/compat-verify

go 1.19
