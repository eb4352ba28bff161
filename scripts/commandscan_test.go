package scripts

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// A use is one place that runs an external command: the command's name and
// where it is named (file:line).
type use struct {
	name  string
	where string
}

// setupTable reads scripts/setup.sh's tables: the Debian package behind each
// command it installs (`[cmd]=package` in `declare -A need=(…)` and
// need_bench), and the other commands it knows of: those it installs with
// `go install …/NAME@version` and those it runs only where they are
// (optional=(…)).
func setupTable(src string) (debian map[string]string, known map[string]bool) {
	debian, known = map[string]string{}, map[string]bool{}
	entry := regexp.MustCompile(`^\s*\[([^\]]+)\]=(\S+)\s*$`)
	table := ""
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "declare -A ") && strings.HasSuffix(trimmed, "=("):
			table = strings.TrimSuffix(strings.TrimPrefix(trimmed, "declare -A "), "=(")
		case trimmed == ")":
			table = ""
		case table == "need" || table == "need_bench" || table == "optional":
			if m := entry.FindStringSubmatch(line); m != nil {
				if table == "optional" {
					known[m[1]] = true
				} else {
					debian[m[1]] = m[2]
				}
			}
		}
	}
	for _, m := range regexp.MustCompile(`go install [^ ]*/([A-Za-z0-9_.-]+)@`).FindAllStringSubmatch(src, -1) {
		known[m[1]] = true
	}
	return debian, known
}

// goCommands lists the commands a Go file names as string literals: the
// program of exec.Command and exec.CommandContext, exec.LookPath's name, and
// every name given to RequireCommand.
func goCommands(path string, src []byte) ([]use, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var uses []use
	literal := func(e ast.Expr) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		if s, err := strconv.Unquote(lit.Value); err == nil {
			uses = append(uses, use{s, fset.Position(lit.Pos()).String()})
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		var name, pkg string
		switch fn := call.Fun.(type) {
		case *ast.SelectorExpr:
			name = fn.Sel.Name
			if id, ok := fn.X.(*ast.Ident); ok {
				pkg = id.Name
			}
		case *ast.Ident:
			name = fn.Name
		}
		switch {
		case pkg == "exec" && (name == "Command" || name == "LookPath") && len(call.Args) > 0:
			literal(call.Args[0])
		case pkg == "exec" && name == "CommandContext" && len(call.Args) > 1:
			literal(call.Args[1])
		case name == "RequireCommand":
			for _, a := range call.Args[min(1, len(call.Args)):] {
				literal(a)
			}
		}
		return true
	})
	return uses, nil
}

// shellKeywords are the shell's reserved words and the builtins bash runs
// itself: none is a program to install.
var shellKeywords = set(`if then else elif fi do done while until for in case esac function select
	time ! { } [ [[ ]] . source : true false echo printf read cd pwd pushd popd export local declare
	typeset readonly set unset shift exit return trap wait kill test eval let ulimit umask getopts
	break continue alias unalias jobs bg fg disown compgen complete mapfile readarray shopt caller
	builtin enable help times type hash dirs suspend logout exec command`)

// reserved are the reserved words after which a command follows.
var reserved = set(`if then else elif do while until ! { }`)

// runners run their arguments as a command: the first word after their
// options is a command too.
var runners = set(`exec command nice nohup timeout xargs env sudo setsid unshare netguard.sh
	netaudit.sh fresh-machine.sh time`)

func set(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// A shToken is a word or an operator of a shell script. A word is plain when
// it is a literal without quotes or expansions; quoted holds the text of a
// word that was one quoted string, so that `bash -c '…'` can be read too.
type shToken struct {
	text   string
	op     bool
	plain  bool
	quoted string
	line   int
}

// shellLexer splits a script into tokens. It reads command substitutions
// ($(…), `…`, <(…)) as scripts of their own (their commands are in subs),
// and skips comments, heredoc bodies, ${…} and arithmetic.
type shellLexer struct {
	src   string
	i     int
	line  int
	toks  []shToken
	subs  []use
	file  string
	heres []string // delimiters of heredocs whose bodies start at the next newline
}

func lexShell(file, src string, line int) ([]shToken, []use) {
	l := &shellLexer{src: src, line: line, file: file}
	l.run()
	return l.toks, l.subs
}

// matching returns the index just past the bracket that closes the one
// opened before i (open, close), honouring quotes and nesting.
func (l *shellLexer) matching(i int, open, close byte) int {
	depth := 1
	for i < len(l.src) {
		c := l.src[i]
		switch {
		case c == '\\':
			i++
		case c == '\'' && open != '{':
			if j := strings.IndexByte(l.src[i+1:], '\''); j >= 0 {
				i += j + 1
			}
		case c == open:
			depth++
		case c == close:
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return len(l.src)
}

// skipTo moves to i, counting the lines it passes.
func (l *shellLexer) skipTo(i int) {
	i = min(i, len(l.src))
	l.line += strings.Count(l.src[l.i:i], "\n")
	l.i = i
}

func (l *shellLexer) sub(start, end int) {
	inner := l.src[start:end]
	toks, subs := lexShell(l.file, inner, l.line)
	l.subs = append(l.subs, subs...)
	l.subs = append(l.subs, commandsOf(l.file, toks)...)
}

func (l *shellLexer) run() {
	var word strings.Builder
	plain, inWord, quotedOnly := true, false, ""
	quotes := 0
	wordLine := l.line
	emit := func() {
		if !inWord {
			return
		}
		t := shToken{text: word.String(), plain: plain, line: wordLine}
		if quotes == 1 && !plain {
			t.quoted = quotedOnly
		}
		l.toks = append(l.toks, t)
		word.Reset()
		plain, inWord, quotedOnly, quotes = true, false, "", 0
	}
	start := func() {
		if !inWord {
			inWord, wordLine = true, l.line
		}
	}
	// opN emits operator text, which takes n bytes of the source
	opN := func(text string, n int) {
		emit()
		l.toks = append(l.toks, shToken{text: text, op: true, line: l.line})
		l.i += n
	}
	op := func(s string) { opN(s, len(s)) }
	for l.i < len(l.src) {
		c := l.src[l.i]
		rest := l.src[l.i:]
		switch {
		case c == '\\' && strings.HasPrefix(rest, "\\\n"):
			l.i += 2
			l.line++
		case c == '\\':
			start()
			if l.i+1 < len(l.src) {
				word.WriteByte(l.src[l.i+1])
			}
			l.i += 2
		case c == '\n':
			emit()
			l.toks = append(l.toks, shToken{text: "\n", op: true, line: l.line})
			l.i++
			l.line++
			for _, delim := range l.heres {
				l.skipHeredoc(delim)
			}
			l.heres = nil
		case c == ' ' || c == '\t':
			emit()
			l.i++
		case c == '#' && !inWord:
			for l.i < len(l.src) && l.src[l.i] != '\n' {
				l.i++
			}
		case c == '\'':
			start()
			end := strings.IndexByte(l.src[l.i+1:], '\'')
			if end < 0 {
				end = len(l.src) - l.i - 1
			}
			body := l.src[l.i+1 : l.i+1+end]
			word.WriteString(body)
			plain, quotedOnly, quotes = false, body, quotes+1
			l.line += strings.Count(body, "\n")
			l.i += end + 2
		case c == '"':
			start()
			plain, quotes = false, quotes+1
			j := l.i + 1
			for j < len(l.src) && l.src[j] != '"' {
				switch {
				case l.src[j] == '\\':
					j++
				case strings.HasPrefix(l.src[j:], "$(("):
					j = l.matchingArith(j+3) - 1
				case strings.HasPrefix(l.src[j:], "$("):
					end := l.matching(j+2, '(', ')')
					l.sub(j+2, end-1)
					j = end - 1
				}
				j++
			}
			body := l.src[l.i+1 : min(j, len(l.src))]
			word.WriteString(body)
			quotedOnly = body
			l.line += strings.Count(body, "\n")
			l.i = j + 1
		case strings.HasPrefix(rest, "$(("):
			start()
			plain = false
			l.skipTo(l.matchingArith(l.i + 3))
		case strings.HasPrefix(rest, "$(") || strings.HasPrefix(rest, "<(") || strings.HasPrefix(rest, ">("):
			start()
			plain = false
			end := l.matching(l.i+2, '(', ')')
			l.sub(l.i+2, end-1)
			l.skipTo(end)
		case strings.HasPrefix(rest, "${"):
			start()
			plain = false
			l.skipTo(l.matching(l.i+2, '{', '}'))
		case c == '$':
			start()
			plain = false
			word.WriteByte(c)
			l.i++
		case c == '`':
			start()
			plain = false
			end := strings.IndexByte(l.src[l.i+1:], '`')
			if end < 0 {
				end = len(l.src) - l.i - 1
			}
			l.sub(l.i+1, l.i+1+end)
			l.skipTo(l.i + end + 2)
		case c == '(' && inWord && plain && strings.HasSuffix(word.String(), "="):
			// an array assignment: name=( … ) holds values, not commands
			plain = false
			l.skipTo(l.matching(l.i+1, '(', ')'))
		case strings.HasPrefix(rest, "<<<"):
			op("<<<")
		case strings.HasPrefix(rest, "<<"):
			emit()
			l.i += 2
			if l.i < len(l.src) && l.src[l.i] == '-' {
				l.i++
			}
			for l.i < len(l.src) && l.src[l.i] == ' ' {
				l.i++
			}
			j := l.i
			for j < len(l.src) && !strings.ContainsRune(" \t\n;|&<>)", rune(l.src[j])) {
				j++
			}
			l.heres = append(l.heres, strings.Trim(l.src[l.i:j], `'"\`))
			l.i = j
		case c == '>' || c == '<':
			if inWord && plain && strings.Trim(word.String(), "0123456789") == "" {
				word.Reset()
				inWord = false
			}
			n := 1
			for l.i+n < len(l.src) && strings.ContainsRune(">&|", rune(l.src[l.i+n])) {
				n++
			}
			// 2>&1 and >&2 name a descriptor, not a file
			if strings.HasSuffix(rest[:n], "&") && l.i+n < len(l.src) && (l.src[l.i+n] >= '0' && l.src[l.i+n] <= '9' || l.src[l.i+n] == '-') {
				emit()
				l.i += n + 1
				continue
			}
			opN("redirect", n)
		case c == '&' && strings.HasPrefix(rest, "&>"):
			opN("redirect", 2)
		case strings.HasPrefix(rest, "&&") || strings.HasPrefix(rest, "||") || strings.HasPrefix(rest, ";;") || strings.HasPrefix(rest, "|&"):
			op(rest[:2])
		case c == ';' || c == '|' || c == '&' || c == '(' || c == ')':
			op(rest[:1])
		default:
			start()
			word.WriteByte(c)
			l.i++
		}
	}
	emit()
}

func (l *shellLexer) matchingArith(i int) int {
	end := strings.Index(l.src[i:], "))")
	if end < 0 {
		return len(l.src)
	}
	return i + end + 2
}

// skipHeredoc moves past a heredoc's body: every line up to its delimiter.
func (l *shellLexer) skipHeredoc(delim string) {
	for l.i < len(l.src) {
		end := strings.IndexByte(l.src[l.i:], '\n')
		if end < 0 {
			end = len(l.src) - l.i
		}
		line := l.src[l.i : l.i+end]
		l.i += end + 1
		l.line++
		if strings.TrimLeft(line, "\t") == delim {
			return
		}
	}
}

var duration = regexp.MustCompile(`^[0-9.]+[smhd]?$`)

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=`)

// commandsOf walks a script's tokens and returns the first word of every
// simple command (and of what runners such as exec, timeout or xargs run)
// that is a plain literal, with a script's `bash -c '…'` read as a script.
func commandsOf(file string, toks []shToken) []use {
	var uses []use
	atCommand, skipNext, inRunner := true, false, false
	caseDepth, inPattern := 0, false
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.op {
			switch t.text {
			case "redirect":
				skipNext = true
			case ")":
				inPattern, atCommand = false, true
			case ";;":
				if caseDepth > 0 {
					inPattern = true
				}
				atCommand = true
			default:
				atCommand = true
			}
			inRunner = false
			continue
		}
		if skipNext {
			skipNext = false
			continue
		}
		if inPattern {
			if t.plain && t.text == "esac" {
				caseDepth--
				inPattern, atCommand = false, false
			}
			continue
		}
		// bash -c 'SCRIPT' and sh -c 'SCRIPT': the script's commands too
		if (t.text == "bash" || t.text == "sh") && i+2 < len(toks) && toks[i+1].text == "-c" && toks[i+2].quoted != "" {
			inner, subs := lexShell(file, toks[i+2].quoted, toks[i+2].line)
			uses = append(uses, subs...)
			uses = append(uses, commandsOf(file, inner)...)
		}
		if !atCommand {
			continue
		}
		switch {
		case inRunner && strings.HasPrefix(t.text, "-"):
			// an option of the runner: its command comes after
			if t.text == "-n" || t.text == "-I" || t.text == "-P" || t.text == "-L" || t.text == "-u" || t.text == "-s" || t.text == "-k" {
				skipNext = true
			}
			continue
		case inRunner && duration.MatchString(t.text):
			continue // timeout's duration
		case t.plain && assignment.MatchString(t.text):
			continue // VAR=value before a command
		case t.plain && (t.text == "case"):
			caseDepth++
			// the word, then "in", then patterns
			for i+1 < len(toks) && !(toks[i+1].plain && toks[i+1].text == "in") {
				i++
			}
			i++
			inPattern, atCommand = true, false
			continue
		case t.plain && (t.text == "for" || t.text == "select"):
			for i+1 < len(toks) && !(toks[i+1].plain && toks[i+1].text == "do") {
				i++
			}
			continue
		case t.plain && t.text == "[[":
			for i+1 < len(toks) && toks[i+1].text != "]]" {
				i++
			}
			atCommand = false
			continue
		case t.plain && i+2 < len(toks) && toks[i+1].text == "(" && toks[i+2].text == ")":
			i += 2 // a function's definition
			continue
		}
		name := t.text
		if t.plain && filepath.IsAbs(name) {
			name = filepath.Base(name)
		}
		base := filepath.Base(name)
		if t.plain && runners[base] {
			if !shellKeywords[base] && !strings.HasSuffix(base, ".sh") {
				uses = append(uses, use{base, file + ":" + strconv.Itoa(t.line)})
			}
			inRunner = true
			if base == "command" && i+1 < len(toks) && strings.HasPrefix(toks[i+1].text, "-") {
				i++
			}
			continue
		}
		inRunner = false
		atCommand = false
		if t.plain && !strings.Contains(name, "/") && !shellKeywords[name] {
			uses = append(uses, use{name, file + ":" + strconv.Itoa(t.line)})
		}
		if reserved[name] {
			atCommand = true // if, then, do, !, {: a command follows
		}
	}
	return uses
}

// shellCommands lists the commands a script runs, and the functions it
// defines (which are not commands).
func shellCommands(file, src string) (uses []use, functions []string) {
	toks, subs := lexShell(file, src, 1)
	for i := 0; i+2 < len(toks); i++ {
		if toks[i].plain && !toks[i].op && toks[i+1].text == "(" && toks[i+2].text == ")" {
			functions = append(functions, toks[i].text)
		}
	}
	return append(subs, commandsOf(file, toks)...), functions
}
