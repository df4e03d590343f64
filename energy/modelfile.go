package energy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

// modelFile is the model as `strand energy calibrate` saves it and
// --energy-model loads it.
type modelFile struct {
	ModelParams `yaml:",inline"`
	// Origin says where the numbers came from, for the reader; figures
	// carry only the parameters.
	Origin string `yaml:"origin,omitempty"`
}

// LoadModel reads a model file: active_watts, idle_watts, cores
// (optional; 0 or absent means this machine's cores) and origin (a note).
// Zero or absent watts take the defaults. An unknown key, or impossible
// parameters, are errors naming the file and the field.
func LoadModel(path string) (ModelParams, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ModelParams{}, fmt.Errorf("energy: model file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var f modelFile
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return ModelParams{}, fmt.Errorf("energy: model file %s: %w (want keys active_watts, idle_watts, cores, origin)", path, err)
	}
	p := f.ModelParams
	p.EnsureDefaults()
	if err := p.Validate(); err != nil {
		return ModelParams{}, fmt.Errorf("model file %s: %w", path, err)
	}
	return p, nil
}

// SaveModel writes p to path as a model file, with origin as its note.
func SaveModel(path string, p ModelParams, origin string) error {
	if err := p.Validate(); err != nil {
		return err
	}
	raw, err := yaml.Marshal(modelFile{ModelParams: p, Origin: origin})
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}
