module github.com/disttrain/disttrain/bindings/go

go 1.19
