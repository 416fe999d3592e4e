module pinninglab.test/negotiatedpins

go 1.27
