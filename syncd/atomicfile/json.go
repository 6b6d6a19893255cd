package atomicfile

import (
	"encoding/json"
	"fmt"
	"os"
)

// WriteJSON replaces path with v as indented JSON and a final newline
// (the records passes leave for `syncd status`: syncd/homes, syncd/kube).
func WriteJSON(path string, v any, mode os.FileMode) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return Write(path, append(b, '\n'), mode)
}

// ReadJSON decodes the JSON file at path into v; the error names the
// file (and wraps fs.ErrNotExist when there is none).
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
