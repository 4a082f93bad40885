package redact

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Mask is what URL and Error put in place of a secret.
const Mask = "***"

// URL returns raw with its secrets masked, for a message: the user
// information (user and password) becomes "***", so does the value of
// every query parameter (keys are kept; a parameter without "=" is masked
// whole) and a non-empty fragment. Scheme, host, port and path are kept.
//
//	URL("https://bob:pw@host/repo/index.yaml?token=T&sig=S")
//	  == "https://***@host/repo/index.yaml?token=***&sig=***"
//
// raw need not be a valid URL: what net/url cannot parse is scrubbed as
// text (see the package documentation), so that no input makes URL echo a
// password. URL is idempotent and costs time linear in len(raw).
func URL(raw string) string { return redactURL(raw, true) }

// Strip returns raw without user information, query and fragment, for an
// identifier: a repository named in an error's Source field, a map key, a
// metrics label.
//
//	Strip("https://bob:pw@host/repo?token=T#x") == "https://host/repo"
//
// Like URL it accepts any string and never echoes the password or the
// query of one that does not parse.
func Strip(raw string) string { return redactURL(raw, false) }

func redactURL(raw string, mask bool) string {
	// A "://" inside the path (a URL passed through a proxy path) could
	// hide a second userinfo that net/url reads as path: scrub bluntly.
	parsed := true
	if _, rest, ok := cutScheme(raw); ok {
		if end := strings.IndexAny(rest, "?#"); end >= 0 {
			rest = rest[:end]
		}
		parsed = !strings.Contains(rest, "://")
	}
	if parsed {
		_, err := url.Parse(raw)
		parsed = err == nil
	}
	return scrub(raw, mask, parsed)
}

// scrub masks (or, for Strip, drops) the userinfo, query and fragment of
// raw, keeping every other byte as it is. parsed says net/url accepted
// raw: with a "//" authority the userinfo then ends where net/url ends it,
// at the last "@" of the authority. Otherwise the text is read bluntly:
// anything before the last "@" of the string (after the scheme's "://")
// is userinfo. The fragment starts at the first "#", and the query at the
// first "?" before it, as net/url reads them.
func scrub(raw string, mask, parsed bool) string {
	var b strings.Builder
	rest, authority := raw, false
	if scheme, after, ok := cutScheme(raw); ok {
		b.WriteString(scheme + "://")
		rest, authority = after, true
	} else if strings.HasPrefix(raw, "//") {
		b.WriteString("//")
		rest, authority = raw[2:], true
	}
	hadUser := false
	if parsed && authority {
		auth, _, _ := strings.Cut(rest, "#")
		auth, _, _ = strings.Cut(auth, "?")
		auth, _, _ = strings.Cut(auth, "/")
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			rest, hadUser = rest[at+1:], true
		} else if auth == "" {
			// No host ("https:///u:p@h"): not a URL anyone meant; blunt.
			parsed = false
		}
	}
	inTail := false // the "@" cut was in the query or fragment
	if !(parsed && authority) {
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			inTail = strings.ContainsAny(rest[:at], "?#")
			rest, hadUser = rest[at+1:], true
		}
	}
	if hadUser && mask {
		b.WriteString(Mask + "@")
	}
	body, frag, hasFrag := strings.Cut(rest, "#")
	body, query, hasQuery := strings.Cut(body, "?")
	if inTail && body != "" {
		// What follows the "@" may be a query value or the fragment.
		body = Mask
	}
	b.WriteString(body)
	writeTail(&b, hasQuery, query, hasFrag && frag != "", mask)
	return b.String()
}

// writeTail writes the masked query and fragment; Strip drops them.
func writeTail(b *strings.Builder, hasQuery bool, query string, hasFrag, mask bool) {
	if !mask {
		return
	}
	if hasQuery {
		b.WriteByte('?')
		maskQuery(b, query)
	}
	if hasFrag {
		b.WriteString("#" + Mask)
	}
}

// maskQuery writes q with every value masked: "k=v" gives "k=***", "k="
// stays, a part without "=" (which could be a bare token) gives "***".
// Both "&" and ";" separate parts, so a value holding ";" is masked whole.
func maskQuery(b *strings.Builder, q string) {
	start := 0
	for i := 0; i <= len(q); i++ {
		if i < len(q) && q[i] != '&' && q[i] != ';' {
			continue
		}
		part := q[start:i]
		if k, v, ok := strings.Cut(part, "="); ok {
			b.WriteString(k + "=")
			if v != "" {
				b.WriteString(Mask)
			}
		} else if part != "" {
			b.WriteString(Mask)
		}
		if i < len(q) {
			b.WriteByte(q[i])
		}
		start = i + 1
	}
}

// cutScheme splits "scheme://rest" when raw starts with a valid scheme.
func cutScheme(raw string) (scheme, rest string, ok bool) {
	i := strings.Index(raw, "://")
	if i <= 0 || !isSchemeStart(raw[0]) {
		return "", raw, false
	}
	for j := 1; j < i; j++ {
		if !isSchemeChar(raw[j]) {
			return "", raw, false
		}
	}
	return raw[:i], raw[i+3:], true
}

func isSchemeStart(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isSchemeChar(c byte) bool {
	return isSchemeStart(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// Text returns s with every URL in it redacted with URL: first each of the
// known URLs wherever s holds it, as given or in the forms Go prints it
// (quoted with %q, or with the password alone masked as net/http and
// (*url.URL).Redacted do), then anything that looks like
// "scheme://…": up to the closing quote when it follows a double quote (as
// in the messages of *url.Error), else up to white space, a quote or an
// angle bracket, less trailing punctuation when it has no query or
// fragment (which could end with it).
//
// Pass as known the URLs a message may quote that the scan cannot find on
// its own: scheme-less references ("user:pass@registry/chart") and URLs
// with spaces or quotes. Text costs time linear in len(s) (times the
// length of the longest known URL, for the replacement of known ones).
func Text(s string, known ...string) string {
	if r := knownReplacer(known); r != nil {
		s = r.Replace(s)
	}
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	last := 0 // s[:last] is written
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "://")
		if j < 0 {
			break
		}
		j += i
		start := j
		for start > last && isSchemeChar(s[start-1]) {
			start--
		}
		for start < j && !isSchemeStart(s[start]) {
			start++
		}
		if start == j {
			i = j + 3
			continue
		}
		end := tokenEnd(s, start, j+3)
		b.WriteString(s[last:start])
		b.WriteString(URL(s[start:end]))
		last, i = end, end
	}
	b.WriteString(s[last:])
	return b.String()
}

// tokenEnd finds where the URL starting at start ends; from is past its
// "://".
func tokenEnd(s string, start, from int) int {
	if start > 0 && s[start-1] == '"' {
		// A %q-quoted URL ends at the next quote not escaped by a backslash.
		for k := from; k < len(s); k++ {
			switch s[k] {
			case '\\':
				k++
			case '"':
				return k
			}
		}
		return len(s)
	}
	end := len(s)
	if k := strings.IndexAny(s[from:], " \t\r\n\"'<>`"); k >= 0 {
		end = from + k
	}
	if strings.ContainsAny(s[from:end], "?#") {
		// Trailing punctuation may be part of a query value: keep it in
		// the token, to be masked with the value.
		return end
	}
	for end > from && strings.IndexByte(".,;:)]}", s[end-1]) >= 0 {
		end--
	}
	return end
}

// knownReplacer replaces the known URLs, in every form Go prints them, by
// their redacted form; longer forms first, so that a URL is never half
// replaced by a shorter one it starts with.
func knownReplacer(known []string) *strings.Replacer {
	type pair struct{ from, to string }
	var pairs []pair
	for _, k := range known {
		red := URL(k)
		if k == "" || red == k {
			continue
		}
		forms := []pair{{k, red}, {unquoted(k), unquoted(red)}}
		if u, err := url.Parse(k); err == nil {
			forms = append(forms, pair{u.String(), red}, pair{u.Redacted(), red}, pair{unquoted(u.Redacted()), unquoted(red)})
		}
		for _, f := range forms {
			if f.from != "" && f.from != f.to {
				pairs = append(pairs, f)
			}
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	slices.SortStableFunc(pairs, func(a, b pair) int { return len(b.from) - len(a.from) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.from, p.to)
	}
	return strings.NewReplacer(args...)
}

// unquoted is s as %q prints it, without the surrounding quotes.
func unquoted(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
