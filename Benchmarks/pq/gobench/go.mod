module pinninglab.test/pqbench

go 1.27
