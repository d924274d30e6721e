module eos-chaos/kwire

go 1.22
