package wasm

// Instantiate makes and closes one instance of m (benchmarks).
func Instantiate(m *Module) {
	in, err := m.instantiate()
	if err != nil {
		panic(err)
	}
	in.close()
}
