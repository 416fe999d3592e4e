module pinninglab/batch-go

go 1.19
