module example.com/dtconsumer

go 1.19

// tests/packaging/go_consumer.sh adds
//   replace github.com/disttrain/disttrain/bindings/go => <prefix>/share/disttrain/go/disttrain
require github.com/disttrain/disttrain/bindings/go v0.1.0
