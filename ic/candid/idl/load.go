package idl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// maxSourceSize bounds what a .did file may weigh; real interfaces are tens
// of kilobytes.
const maxSourceSize = 16 << 20

// source is one file of a program: the main file or an import.
type source struct {
	ast     *fileAST
	service bool // imported with `import service`, so its methods join the main service
	from    Pos  // the import declaration that brought it in
}

// loadProgram parses path and, depth first, every file it imports. Paths are
// resolved relative to the importing file. A file reached twice is read once
// (example.did imports b.did directly and through a.did), which also ends
// import cycles; imports come before the importer, in the order they appear.
func loadProgram(path string) (main *fileAST, imported []source, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, fmt.Errorf("resolve %s: %w", path, err)
	}
	main, err = parseSourceFile(path)
	if err != nil {
		return nil, nil, err
	}
	visited := map[string]int{abs: -1} // index into imported, -1 for the main file
	if err := loadImports(main, filepath.Dir(path), visited, &imported); err != nil {
		return nil, nil, err
	}
	return main, imported, nil
}

func loadImports(f *fileAST, dir string, visited map[string]int, out *[]source) error {
	for _, imp := range f.imports {
		p := imp.path
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return errorf(imp.pos, "cannot import %q: %v", imp.path, err)
		}
		if i, ok := visited[abs]; ok {
			if i >= 0 && imp.service {
				(*out)[i].service = true
			}
			continue
		}
		sub, err := parseSourceFile(p)
		if err != nil {
			var perr *Error
			if errors.As(err, &perr) {
				return err
			}
			return errorf(imp.pos, "cannot import %q: %v", imp.path, err)
		}
		visited[abs] = -2 // being loaded: a cycle back here is ignored
		if err := loadImports(sub, filepath.Dir(p), visited, out); err != nil {
			return err
		}
		*out = append(*out, source{ast: sub, service: imp.service, from: imp.pos})
		visited[abs] = len(*out) - 1
	}
	return nil
}

func parseSourceFile(path string) (*fileAST, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("is a directory")}
	}
	if st.Size() > maxSourceSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxSourceSize)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseSource(path, string(b), false)
}

func parseSource(file, src string, tests bool) (f *fileAST, err error) {
	defer catch(&err)
	return newParser(file, src).parseProgram(file, tests)
}
