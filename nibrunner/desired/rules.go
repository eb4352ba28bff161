package desired

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"
)

// A scalarRule is everything the seed says about one named type: the
// decoder enforces it and the schema generator publishes it, so the two
// cannot disagree.
type scalarRule struct {
	// Description is the seed's wording, shown in the schema and used in
	// messages ("is not <Description>").
	Description string
	// Pattern is the schema's pattern. match enforces it in Go; when nil
	// the pattern is compiled with regexp (it then must have no lookahead).
	Pattern string
	match   func(string) bool
	// MinLength and MaxLength count characters (code points), as JSON
	// Schema does. Zero means no bound.
	MinLength, MaxLength int
	// Minimum and Maximum bound an integer when hasRange.
	hasRange         bool
	Minimum, Maximum int64
	// Enum lists the words a string may be.
	Enum []string
	// Not lists values refused although they match the pattern.
	Not []string
	// NotRule says why a value in Not is refused.
	NotRule string
	// check is a further rule no schema keyword says; it returns the rule
	// broken, or "".
	check func(string) string
	// MaxItems and ItemMaxLength bound an array of strings.
	MaxItems, ItemMaxLength int
	// KeyPattern is what every key of a map must match.
	KeyPattern string
	keyMatch   *regexp.Regexp
}

const (
	identifierPattern = `^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`
	digestPattern     = `^[0-9a-f]{64}$`
	// guestPathPattern is the seed's pattern. Go's regexp has no lookahead,
	// so isGuestPath enforces it by hand.
	guestPathPattern = `^/$|^(/(?!\.\.?(/|$))[^/\\"'\x00-\x1f]+)+$`
	portNamePattern  = `^[a-z][a-z0-9-]{0,15}$`
	hostnamePattern  = `^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$`
	envKeyPattern    = `^[A-Za-z_][A-Za-z0-9_]*$`
)

// GuestPathPattern is the seed's GuestPath pattern, which needs a regexp
// engine with lookahead; MatchGuestPath is its Go twin.
const GuestPathPattern = guestPathPattern

func ranged(desc string, lo, hi int64) scalarRule {
	return scalarRule{Description: desc, hasRange: true, Minimum: lo, Maximum: hi}
}

func enum[T ~string](desc string, words ...T) scalarRule {
	r := scalarRule{Description: desc}
	for _, w := range words {
		r.Enum = append(r.Enum, string(w))
	}
	return r
}

func identifier() scalarRule {
	return scalarRule{Description: "an identifier", Pattern: identifierPattern}
}

// rules holds the rule of every named scalar type of desired.json.
var rules = map[reflect.Type]*scalarRule{}

func register[T any](r scalarRule) {
	if r.Pattern != "" && r.match == nil {
		re := regexp.MustCompile(r.Pattern)
		r.match = re.MatchString
	}
	if r.KeyPattern != "" {
		r.keyMatch = regexp.MustCompile(r.KeyPattern)
	}
	rules[reflect.TypeFor[T]()] = &r
}

func init() {
	register[HostId](identifier())
	register[AppId](identifier())
	register[VolumeId](identifier())
	register[DeploymentId](identifier())
	register[CheckpointId](identifier())
	register[ExportId](identifier())
	register[Sha256Digest](scalarRule{Description: "a lowercase hex sha-256", Pattern: digestPattern})
	register[ObjectKey](scalarRule{Description: "between 1 and 1024 characters", MinLength: 1, MaxLength: 1024})
	register[GuestPath](scalarRule{Description: "a guest path", Pattern: guestPathPattern, match: MatchGuestPath, MaxLength: 4096})
	register[ExecutablePath](scalarRule{
		Description: "an absolute path to a file other than /sbin/init",
		Pattern:     guestPathPattern, match: MatchGuestPath, MaxLength: 4096,
		Not: []string{"/", "/sbin/init"}, NotRule: "names no program the guest may run: it must be a file other than / and /sbin/init",
	})
	register[HttpPort](ranged("a TCP port", 1, 65535))
	register[GuestPort](ranged("a port", 1, 65535))
	register[PortName](scalarRule{Description: "lowercase letters, digits and dashes, starting with a letter", Pattern: portNamePattern})
	register[Hostname](scalarRule{Description: "a hostname", Pattern: hostnamePattern, MaxLength: 253})
	register[IdleTimeoutMs](ranged("milliseconds, 60000 to 86400000", 60000, 86400000))
	register[MaxLifetimeMs](ranged("milliseconds, 60000 to 604800000", 60000, 604800000))
	register[TenantValue](scalarRule{
		Description: "Handed to the app as is, except that ${NAME} and $NAME are filled in for NAME in NIBRUN_HOSTNAME, NIBRUN_HTTP_PORT; any other $NIBRUN_ reference is refused.",
		MaxLength:   32768, check: checkNibrunReferences,
	})
	register[TenantArguments](scalarRule{Description: "The arguments the binary is started with.", MaxItems: 64, ItemMaxLength: 4096})
	register[TenantEnvironment](scalarRule{Description: "environment variables handed to the app", KeyPattern: envKeyPattern})
	register[DesiredPresence](enum("whether it should exist", Present, Absent))
	register[DesiredInstanceState](enum("The whole of an instance's activation policy.", StateRunning, StateOnRequest, StateStopped))
	register[LayerKind](enum("what a layer's object is", LayerFilesystem, LayerExecutable, LayerImage))
	register[ImageReference](scalarRule{
		Description: "an image reference pinned by digest: registry/repository@sha256:<64 hex digits>",
		// The pattern is the schema's; in Go the check says the same, in a
		// sentence that says how to pin the image.
		Pattern: imageReferencePattern, match: func(string) bool { return true },
		MaxLength: 1024, check: ImageReferenceProblem,
	})
	register[HealthCheckKind](enum("how an instance's wellness is read", HealthHTTP, HealthTCP, HealthBootCompleted))
	register[SleepPolicyKind](enum("what puts a running microVM back to sleep", SleepNever, SleepTrafficIdle, SleepMaxLifetime))
	register[AppHostnameKind](enum("who owns a hostname", HostnamePlatform, HostnameCustom))
}

// fieldRules are rules a `nib:"rule=name"` tag puts on one plain field.
var fieldRules = map[string]*scalarRule{
	"httpPath": {Description: "an HTTP request path", Pattern: `^/`, match: func(s string) bool { return strings.HasPrefix(s, "/") }, MaxLength: 4096},
	// message is reported.json's: a sentence a person can act on.
	"message": {Description: "a sentence a person can act on, at most 512 characters", MaxLength: 512},
}

// MatchGuestPath reports whether p matches the seed's GuestPath pattern:
// "/" alone, or one or more segments each "/" followed by at least one
// character that is none of / \ " ' or a control character (0x00-0x1f),
// where no segment is "." or "..". That is the (?!\.\.?(/|$)) lookahead,
// written out because Go's regexp has none.
func MatchGuestPath(p string) bool {
	if p == "/" {
		return true
	}
	if p == "" || p[0] != '/' {
		return false
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if c == '\\' || c == '"' || c == '\'' || c < 0x20 {
				return false
			}
		}
	}
	return true
}

// allowedReferences are the $NIBRUN_ names a tenant value may refer to.
var allowedReferences = map[string]bool{"NIBRUN_HOSTNAME": true, "NIBRUN_HTTP_PORT": true}

// checkNibrunReferences refuses a value that refers, as $NAME or ${NAME},
// to a NIBRUN_ variable other than NIBRUN_HOSTNAME and NIBRUN_HTTP_PORT:
// the host fills only those, and any other would reach the app unfilled or
// leak host internals.
func checkNibrunReferences(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] != '$' {
			continue
		}
		rest := v[i+1:]
		braced := strings.HasPrefix(rest, "{")
		if braced {
			rest = rest[1:]
		}
		if !strings.HasPrefix(rest, "NIBRUN_") {
			continue
		}
		n := 0
		for n < len(rest) && isNameByte(rest[n]) {
			n++
		}
		name := rest[:n]
		if !allowedReferences[name] {
			return fmt.Sprintf("refers to $%s; only NIBRUN_HOSTNAME and NIBRUN_HTTP_PORT may be referenced", name)
		}
	}
	return ""
}

func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// checkString applies r to s and returns the rule broken, or "".
func (r *scalarRule) checkString(s string) string {
	if len(r.Enum) > 0 {
		for _, w := range r.Enum {
			if s == w {
				return ""
			}
		}
		return fmt.Sprintf("%s is not one of %s", quote(s), strings.Join(quoteAll(r.Enum), ", "))
	}
	n := utf8.RuneCountInString(s)
	if r.MinLength > 0 && n < r.MinLength {
		if r.MinLength == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("must be at least %d characters", r.MinLength)
	}
	if r.MaxLength > 0 && n > r.MaxLength {
		return fmt.Sprintf("is %d characters; at most %d are allowed", n, r.MaxLength)
	}
	if r.match != nil && !r.match(s) {
		return fmt.Sprintf("%s is not %s (%s)", quote(s), r.Description, r.Pattern)
	}
	for _, bad := range r.Not {
		if s == bad {
			return fmt.Sprintf("%s %s", quote(s), r.NotRule)
		}
	}
	if r.check != nil {
		return r.check(s)
	}
	return ""
}

// quote renders a value for a message, shortened so a 32 KiB value does
// not drown the reason.
func quote(s string) string {
	const max = 64
	if utf8.RuneCountInString(s) > max {
		return fmt.Sprintf("%q…", string([]rune(s)[:max]))
	}
	return fmt.Sprintf("%q", s)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// imageReferencePattern is the schema's pattern for an image reference: a
// name, then @sha256: and 64 lowercase hex digits.
const imageReferencePattern = `^[^@\s]+@sha256:[0-9a-f]{64}$`

// ImageReferenceProblem says what is wrong with an image reference, as a
// sentence that says how to pin it, or "" when it is pinned by digest
// (nibrunner/image checks the name's grammar when it pulls).
func ImageReferenceProblem(s string) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		name := s
		if slash, colon := strings.LastIndex(s, "/"), strings.LastIndex(s, ":"); colon > slash {
			name = s[:colon]
		}
		return fmt.Sprintf("names no digest, so what runs could change under the same name; pin it: `skopeo inspect --format '{{.Digest}}' docker://%s` or `crane digest %s` prints the sha256, then write %s@sha256:<that digest>", s, s, name)
	}
	if d := s[at+1:]; !imageDigestRE.MatchString(d) {
		return fmt.Sprintf("has the digest %q, which is not sha256: and 64 lowercase hex digits; copy it whole from `skopeo inspect docker://%s` or `crane digest %s`", d, s[:at], s[:at])
	}
	if s[:at] == "" || strings.ContainsAny(s[:at], " \t\n") {
		return "names no image before its digest; write it as registry/repository@sha256:<digest>"
	}
	return ""
}

var imageDigestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
