package reconcile

import "testing"

func TestDeclaredAndLiveStringsAreQuotedAndALongDifferenceIsPointedAt(t *testing.T) {
	for _, tc := range []struct{ declared, live, want string }{
		{"Europe,CH,Zurich", "Europe,CH,Zurich ", `declared="Europe,CH,Zurich" live="Europe,CH,Zurich "`},
		{"a\u00a0b", "a b", `declared="a\u00a0b" live="a b"`},
		{"Europe,Switzerland,Zürich", "Europe,Switzerland,Zurich",
			`declared="Europe,Switzerland,Zürich" live="Europe,Switzerland,Zurich" (first difference at character 21: 'ü' vs 'u')`},
		{"Europe,Switzerland,Geneva", "Europe,Switzerland,Geneva-2",
			`declared="Europe,Switzerland,Geneva" live="Europe,Switzerland,Geneva-2" (first difference at character 26: (end) vs '-')`},
	} {
		if got := declaredLive(tc.declared, tc.live); got != tc.want {
			t.Errorf("declaredLive(%q, %q)\n got %s\nwant %s", tc.declared, tc.live, got, tc.want)
		}
	}
}
