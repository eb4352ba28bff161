package guest

import (
	"sort"
	"strconv"
	"strings"
)

// Variables the guest sets itself. A tenant variable with one of these names
// is dropped: the platform's value is the one the program must see.
const (
	EnvHTTPPort = "NIBRUN_HTTP_PORT"
	EnvPort     = "PORT"
	EnvDataDir  = "NIBRUN_DATA_DIR"
	EnvHostname = "NIBRUN_HOSTNAME"
)

// defaultPath is set when the tenant names no PATH, so a program that runs
// a helper by name finds it in the usual places.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Environ builds the tenant's environment as "NAME=value" strings, sorted by
// name: the tenant's variables (minus the platform's names) with ${NAME} and
// $NAME filled in for NIBRUN_HOSTNAME and NIBRUN_HTTP_PORT, then the
// platform's own. NIBRUN_DATA_DIR is the working directory, which is where
// the program's persistent state lives.
func (c Config) Environ() []string {
	port := strconv.Itoa(c.HTTPPort)
	fill := map[string]string{EnvHostname: c.Hostname, EnvHTTPPort: port}
	env := map[string]string{}
	for k, v := range c.Environment {
		switch k {
		case EnvHTTPPort, EnvPort, EnvDataDir, EnvHostname:
			continue
		}
		env[k] = Expand(v, fill)
	}
	if _, ok := env["PATH"]; !ok {
		env["PATH"] = defaultPath
	}
	env[EnvHTTPPort] = port
	env[EnvPort] = port
	env[EnvDataDir] = c.WorkingDirectory
	env[EnvHostname] = c.Hostname
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Expand replaces ${NAME} and $NAME in s for each NAME in fill and leaves
// every other reference as written. $NAME takes the longest run of name
// characters, so $NIBRUN_HTTP_PORTS is not $NIBRUN_HTTP_PORT followed by S.
func Expand(s string, fill map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		if s[i+1] == '{' {
			end := strings.IndexByte(s[i+2:], '}')
			if end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := fill[name]; ok {
					b.WriteString(v)
					i += 3 + end
					continue
				}
			}
			b.WriteByte('$')
			i++
			continue
		}
		j := i + 1
		for j < len(s) && isNameByte(s[j], j == i+1) {
			j++
		}
		if v, ok := fill[s[i+1:j]]; ok && j > i+1 {
			b.WriteString(v)
			i = j
			continue
		}
		b.WriteByte('$')
		i++
	}
	return b.String()
}

func isNameByte(c byte, first bool) bool {
	switch {
	case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		return true
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}
