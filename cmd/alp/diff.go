package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// unifiedDiff is a unified diff (three lines of context) from a to b, both
// named path: the old side "old/path", the new "new/path", as terraform fmt
// -diff labels them. Configuration files are small, so the longest common
// subsequence is found the plain quadratic way.
func unifiedDiff(path string, a, b []byte) string {
	x, y := splitLines(string(a)), splitLines(string(b))
	// lcs[i][j] is the length of the longest common subsequence of x[i:], y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte // ' ', '-', '+'
		text string
		ai   int // lines of a before this one
		bi   int // lines of b before this one
	}
	var ops []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, line{' ', x[i], i, j})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, line{'-', x[i], i, j})
			i++
		default:
			ops = append(ops, line{'+', y[j], i, j})
			j++
		}
	}
	const context = 3
	var out strings.Builder
	label := strings.TrimPrefix(filepath.ToSlash(path), "/")
	fmt.Fprintf(&out, "--- old/%s\n+++ new/%s\n", label, label)
	for k := 0; k < len(ops); {
		if ops[k].op == ' ' {
			k++
			continue
		}
		// A hunk: from context lines before this change to context lines
		// after the last change closer than 2*context to the one before.
		start := max(0, k-context)
		end := k
		for end < len(ops) {
			if ops[end].op != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].op == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(len(ops), end+context)
				break
			}
			end = run
		}
		var na, nb int
		for _, o := range ops[start:end] {
			if o.op != '+' {
				na++
			}
			if o.op != '-' {
				nb++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(ops[start].ai, na), hunkRange(ops[start].bi, nb))
		for _, o := range ops[start:end] {
			out.WriteByte(o.op)
			out.WriteString(o.text)
			if !strings.HasSuffix(o.text, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		k = end
	}
	return out.String()
}

// hunkRange is a hunk header's start,count: 1-based, and the line before
// the hunk when it is empty, as diff -u writes it.
func hunkRange(before, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", before)
	}
	return fmt.Sprintf("%d,%d", before+1, n)
}

// splitLines splits s after each newline, keeping it; a last line without
// one is kept as it is.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
