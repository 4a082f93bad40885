package redact

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestURL(t *testing.T) {
	tests := []struct{ name, in, url, strip string }{
		{"plain", "https://charts.example.com/stable", "https://charts.example.com/stable", "https://charts.example.com/stable"},
		{"user and password", "https://bob:s3cret@charts.example.com/x", "https://***@charts.example.com/x", "https://charts.example.com/x"},
		{"user only", "https://ghp_T0KEN@github.com/org/repo", "https://***@github.com/org/repo", "https://github.com/org/repo"},
		{"query values", "http://user:pass@host/repo/index.yaml?token=T&sig=S2", "http://***@host/repo/index.yaml?token=***&sig=***", "http://host/repo/index.yaml"},
		{"bare query part and empty value", "https://h/x?SECRET&a=&b=1;c=2", "https://h/x?***&a=&b=***;c=***", "https://h/x"},
		{"value with equals", "https://h/x?sig=a=b", "https://h/x?sig=***", "https://h/x"},
		{"fragment", "https://h/x#access_token=SECRET", "https://h/x#***", "https://h/x"},
		{"empty query kept", "https://h/x?", "https://h/x?", "https://h/x"},
		{"oci", "oci://bob:s3cret@ghcr.io/org/charts", "oci://***@ghcr.io/org/charts", "oci://ghcr.io/org/charts"},
		{"scheme-less reference", "bob:s3cret@ghcr.io/org/charts", "***@ghcr.io/org/charts", "ghcr.io/org/charts"},
		{"registry without scheme", "localhost:5000/charts/app", "localhost:5000/charts/app", "localhost:5000/charts/app"},
		{"bad escape", "https://user:s3cr3t@host/%zz?token=SECRET", "https://***@host/%zz?token=***", "https://host/%zz"},
		{"space in host", "https://bob:s3cret@exa mple.com:port/x", "https://***@exa mple.com:port/x", "https://exa mple.com:port/x"},
		{"slash in password", "https://user:pa/ss@host/x", "https://***@host/x", "https://host/x"},
		{"question mark in password", "https://user:pa?ss@host/x", "https://***@***", "https://***"},
		{"hash in password", "https://user:pa#ss@host/x", "https://***@***", "https://***"},
		{"at in the query of a bad URL", "https://h/%zz?e=a@b.com", "https://***@***", "https://***"},
		{"control character", "https://user:pa\nss@host/x?t=SECRET", "https://***@host/x?t=***", "https://host/x"},
		{"nested URL in path", "https://proxy/https://u:SECRET@h/x", "https://***@h/x", "https://h/x"},
		{"nested URL in query is masked", "https://h/x?next=https://u:SECRET@o/", "https://h/x?next=***", "https://h/x"},
		{"not a url", "./charts/app", "./charts/app", "./charts/app"},
		{"empty", "", "", ""},
		{"at in path", "https://registry.npmjs.org/@scope/pkg", "https://registry.npmjs.org/@scope/pkg", "https://registry.npmjs.org/@scope/pkg"},
		{"already redacted", "https://***@h/x?token=***#***", "https://***@h/x?token=***#***", "https://h/x"},
		{"password masked by net/http", "https://bob:***@h/x", "https://***@h/x", "https://h/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.url, URL(tt.in))
			assert.Equal(t, tt.strip, Strip(tt.in))
			assert.Equal(t, tt.url, URL(URL(tt.in)), "idempotent")
		})
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		name, in string
		known    []string
		want     string
	}{
		{name: "url.Error", in: `Get "http://bob:***@h:1/r?token=SECRET/index.yaml": dial tcp: connection refused`,
			want: `Get "http://***@h:1/r?token=***": dial tcp: connection refused`},
		{name: "unquoted with trailing colon", in: `GET https://h/x.tgz: 404`, want: `GET https://h/x.tgz: 404`},
		{name: "unquoted query takes trailing punctuation", in: `GET https://h/x.tgz?sig=SECRET...: 404`, want: `GET https://h/x.tgz?sig=*** 404`},
		{name: "two urls", in: `from https://a:b@h1/x to <https://h2/y?t=SECRET>.`, want: `from https://***@h1/x to <https://h2/y?t=***>.`},
		{name: "quoted with escaped quote", in: `parse "https://u:pa\"ss@h/x?t=S": bad`, want: `parse "https://***@h/x?t=***": bad`},
		{name: "quoted with space", in: `parse "https://bob:SECRET@exa mple.com/x": invalid character " " in host name`,
			want: `parse "https://***@exa mple.com/x": invalid character " " in host name`},
		{name: "known scheme-less reference", in: `invalid reference: bob:SECRET@ghcr.io/org/app:1.0`, known: []string{"bob:SECRET@ghcr.io/org/app"},
			want: `invalid reference: ***@ghcr.io/org/app:1.0`},
		{name: "known in Go's quoted form", in: `parse "https://u:p@h/\n?t=SECRET"`, known: []string{"https://u:p@h/\n?t=SECRET"},
			want: `parse "https://***@h/\n?t=***"`},
		{name: "nothing to do", in: "connection refused", want: "connection refused"},
		{name: "scheme only", in: "see ://x and http:// end", want: "see ://x and http:// end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Text(tt.in, tt.known...)
			assert.Equal(t, tt.want, got)
			assert.NotContains(t, got, "SECRET")
		})
	}
}

func TestError(t *testing.T) {
	secretURL := "https://bob:s3cret@127.0.0.1:1/r?token=SECRET"
	req, err := http.NewRequest(http.MethodGet, secretURL, nil)
	require.NoError(t, err)
	_, doErr := http.DefaultClient.Do(req)
	require.Error(t, doErr)
	require.Contains(t, doErr.Error(), "SECRET", "net/http prints the query")

	for _, tt := range []struct {
		name string
		err  error
	}{
		{"client error", doErr},
		{"wrapped client error", fmt.Errorf("fetch: %w", doErr)},
		{"parse error", func() error { _, err := url.Parse("https://bob:s3cret@h/%zz?token=SECRET"); return err }()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Error(tt.err, secretURL)
			for _, form := range []string{got.Error(), fmt.Sprintf("%v", got), fmt.Sprintf("%+v", got), fmt.Sprintf("%s", got),
				fmt.Errorf("outer: %w", got).Error()} {
				assert.NotContains(t, form, "SECRET")
				assert.NotContains(t, form, "s3cret")
				assert.NotContains(t, form, "bob")
			}
			assert.ErrorIs(t, got, tt.err)
			var ue *url.Error
			require.ErrorAs(t, got, &ue)
			assert.NotContains(t, ue.URL, "SECRET")
			assert.NotContains(t, ue.Error(), "s3cret")
		})
	}
	t.Run("net.Error and context errors still match", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, secretURL, nil)
		require.NoError(t, err)
		_, err = http.DefaultClient.Do(req)
		got := Error(err)
		assert.ErrorIs(t, got, context.Canceled)
		var ne net.Error
		assert.ErrorAs(t, got, &ne)
		assert.NotContains(t, got.Error(), "SECRET")
	})
	t.Run("nothing to redact", func(t *testing.T) {
		base := errors.New("plain")
		assert.Same(t, base, Error(base))
		assert.NoError(t, Error(nil))
	})
}

// TestLinear: the scan does not go quadratic on URLs packed together.
func TestLinear(t *testing.T) {
	s := strings.Repeat("a://", 50000) + strings.Repeat("@", 1000) + strings.Repeat(`"h://x `, 20000)
	out := Text(s, "u:p@h")
	assert.NotEmpty(t, out)
	assert.NotEmpty(t, URL(s))
}

// secretFree reports whether secret cannot be told from the rest of the
// input: too short, or also in one of the parts that are kept.
func secretFree(secret string, kept ...string) bool {
	if len(secret) < 4 {
		return true
	}
	for _, k := range kept {
		if strings.Contains(k, secret) || strings.Contains(secret, k) && k != "" {
			return true
		}
	}
	return false
}

// FuzzURL: a password, user name or query value put into a URL, encoded as
// net/url writes it, never appears in URL's output, nor in Strip's, nor
// in what Text makes of a message quoting the URL.
func FuzzURL(f *testing.F) {
	f.Add("https", "bob", "s3cret", "charts.example.com", "/repo/index.yaml", "token", "SECRET")
	f.Add("oci", "", "s3cret", "ghcr.io", "/org/charts", "sig", "SECRET2")
	f.Add("http", "u", "pa/ss@x", "127.0.0.1:8080", "/%zz", "X-Amz-Signature", "abc?def")
	f.Add("https", "user:name", "p#w?d", "h", "", "k", "v&w=x")
	f.Add("https", "0", "000/", "000", "0000", "1", "0")
	f.Add("https", "0", "@000", "0000", "/1", "", "0")
	f.Add("https", "0", "0", "0", "0", "0", "....")
	f.Add("0", "0", "/000", "000", "1", "1", "0")
	f.Fuzz(func(t *testing.T, scheme, user, pass, host, path, key, token string) {
		if scheme == "" || !isSchemeStart(scheme[0]) || strings.IndexFunc(scheme, func(r rune) bool { return r > 127 || !isSchemeChar(byte(r)) }) >= 0 {
			scheme = "https"
		}
		u := &url.URL{Scheme: scheme, User: url.UserPassword(user, pass), Host: host, Path: path,
			RawQuery: url.Values{key: {token}}.Encode()}
		raw := u.String()
		outs := []string{URL(raw), Strip(raw), Text("Get " + strconv.Quote(raw) + ": EOF")}
		if !strings.ContainsAny(raw, " \t\r\n\"'<>`") {
			// Unquoted, a URL ends at the first of these.
			outs = append(outs, Text("GET "+raw+" failed"))
		}
		for _, out := range outs {
			for _, secret := range []string{pass, url.QueryEscape(token), url.PathEscape(pass), user} {
				// What the output holds besides the secrets, from neutral ones.
				neutral := *u
				neutral.User = url.UserPassword("x", "x")
				neutral.RawQuery = url.Values{key: {"x"}}.Encode()
				skeleton := "GET " + strconv.Quote(URL(neutral.String())) + " " + URL(neutral.String()) + " " + Strip(neutral.String())
				if secretFree(secret, skeleton, path, key) {
					continue
				}
				if strings.Contains(out, secret) {
					t.Fatalf("%q: %q leaks %q", raw, out, secret)
				}
			}
		}
	})
}

// FuzzURLText: secrets spliced into URL text, without the characters that
// would make them mean another part of the URL, never appear in the output,
// whether or not the text parses as a URL.
func FuzzURLText(f *testing.F) {
	f.Add("https://", "bob", "s3cret", "charts.example.com/repo", "token", "SECRET")
	f.Add("oci://", "x", "s3cret", "ghcr.io/%zz", "sig", "SECRET2")
	f.Add("", "u", "p", "host name/x", "t", "v")
	f.Add("///", "0", "0000", "0", "0", "0")
	f.Add("", "0", "0", "0", "@", "0000")
	f.Fuzz(func(t *testing.T, prefix, user, pass, rest, key, token string) {
		if strings.ContainsAny(pass+user, "/?#@") || strings.ContainsAny(token, "&;#") || strings.ContainsAny(key, "=&;#?") ||
			strings.ContainsAny(rest, "?#") || !utf8.ValidString(pass+token) {
			return
		}
		if scheme, after, ok := cutScheme(prefix); prefix != "" && prefix != "//" && (!ok || scheme == "" || after != "") {
			return // the prefix must leave user:pass where a userinfo goes
		}
		raw := prefix + user + ":" + pass + "@" + rest + "?" + key + "=" + token
		if once := URL(raw); URL(once) != once {
			t.Fatalf("URL is not idempotent on %q: %q, then %q", raw, once, URL(once))
		}
		for _, out := range []string{URL(raw), Strip(raw), Text(raw, raw)} {
			for _, secret := range []string{pass, token} {
				if secretFree(secret, prefix+"***@"+rest+"?"+key+"=***") {
					continue
				}
				if strings.Contains(out, secret) {
					t.Fatalf("%q: %q leaks %q", raw, out, secret)
				}
			}
		}
	})
}
