package heraldwebhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// fixtures is the file clients/webhook-fixtures/capture.py writes from
// signatures the real herald binary made.
type fixtures struct {
	Secret     string `json:"secret"`
	ToleranceS int64  `json:"tolerance_s"`
	Cases      []struct {
		Name   string  `json:"name"`
		Header string  `json:"header"`
		Body   string  `json:"body"`
		Now    int64   `json:"now"`
		Valid  bool    `json:"valid"`
		Reason *string `json:"reason"`
	} `json:"cases"`
}

var reasons = map[string]error{
	"missing":   ErrMissing,
	"malformed": ErrMalformed,
	"stale":     ErrStale,
	"mismatch":  ErrMismatch,
}

func TestFixturesFromHerald(t *testing.T) {
	path := os.Getenv("HERALD_WEBHOOK_FIXTURES")
	if path == "" {
		if os.Getenv("HERALD_REQUIRE_FIXTURES") == "1" {
			t.Fatal("HERALD_REQUIRE_FIXTURES=1 but HERALD_WEBHOOK_FIXTURES is not set")
		}
		t.Skip("HERALD_WEBHOOK_FIXTURES not set (run clients/webhook-fixtures/capture.py)")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var fx fixtures
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(fx.Cases) == 0 || fx.Secret == "" {
		t.Fatalf("%s: no secret or no cases", path)
	}
	valid := 0
	for _, c := range fx.Cases {
		err := Verify([]byte(fx.Secret), c.Header, []byte(c.Body),
			time.Duration(fx.ToleranceS)*time.Second, time.Unix(c.Now, 0))
		switch {
		case c.Valid:
			valid++
			if err != nil {
				t.Errorf("%s: want valid, got %v", c.Name, err)
			}
		case c.Reason == nil:
			t.Errorf("%s: an invalid case with no reason in the fixture", c.Name)
		default:
			want, known := reasons[*c.Reason]
			if !known {
				t.Errorf("%s: unknown reason %q in the fixture", c.Name, *c.Reason)
			} else if !errors.Is(err, want) {
				t.Errorf("%s: want %v, got %v", c.Name, want, err)
			}
		}
	}
	if valid == 0 || valid == len(fx.Cases) {
		t.Errorf("fixture has %d valid of %d cases; want some of each", valid, len(fx.Cases))
	}
}

// sign is what Herald sends, written independently of Verify.
func sign(secret string, t int64, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.%s", t, body)
	return fmt.Sprintf("t=%d,v1=%s", t, hex.EncodeToString(mac.Sum(nil)))
}

func TestFixedVector(t *testing.T) {
	// HMAC-SHA256("whsec", `1700000000.{"id":1}`), the vector of the Rust
	// tests, computed once outside Go.
	const header = "t=1700000000,v1=e79220cb981f992adbc8b93ac6d46028b0217ea19327d27dc9d18bf334403bde"
	body := []byte(`{"id":1}`)
	if err := Verify([]byte("whsec"), header, body, DefaultTolerance, time.Unix(1_700_000_000, 0)); err != nil {
		t.Fatal(err)
	}
	if got := sign("whsec", 1_700_000_000, string(body)); got != header {
		t.Fatalf("sign() in these tests is off: %s", got)
	}
}

func TestOwnCases(t *testing.T) {
	const secret = "s3cret"
	const at = int64(1_800_000_000)
	body := `{"id":7,"message":{"text":"héllo"}}`
	good := sign(secret, at, body)
	sig := good[strings.Index(good, "v1=")+3:]
	now := time.Unix(at, 0)
	cases := []struct {
		name      string
		header    string
		body      string
		now       time.Time
		tolerance time.Duration
		want      error
	}{
		{"good", good, body, now, DefaultTolerance, nil},
		{"sub-second now is truncated", good, body, now.Add(300*time.Second + 999*time.Millisecond), DefaultTolerance, nil},
		{"tolerance rounds down to seconds", good, body, now.Add(2 * time.Second), 2500 * time.Millisecond, nil},
		{"past a small tolerance", good, body, now.Add(3 * time.Second), 2500 * time.Millisecond, ErrStale},
		{"zero tolerance, same second", good, body, now, 0, nil},
		{"negative tolerance, same second", good, body, now, -time.Second, nil},
		{"zero tolerance, a second later", good, body, now.Add(time.Second), 0, ErrStale},
		{"uppercase hex", fmt.Sprintf("t=%d,v1=%s", at, strings.ToUpper(sig)), body, now, DefaultTolerance, nil},
		{"tabs and spaces", fmt.Sprintf("  t=%d ,\tv1=%s  ", at, sig), body, now, DefaultTolerance, nil},
		{"only spaces", "   ", body, now, DefaultTolerance, ErrMissing},
		{"t twice", fmt.Sprintf("t=%d,t=%d,v1=%s", at, at, sig), body, now, DefaultTolerance, ErrMalformed},
		{"t signed", fmt.Sprintf("t=+%d,v1=%s", at, sig), body, now, DefaultTolerance, ErrMalformed},
		{"t negative", fmt.Sprintf("t=-1,v1=%s", sig), body, now, DefaultTolerance, ErrMalformed},
		{"t empty", fmt.Sprintf("t=,v1=%s", sig), body, now, DefaultTolerance, ErrMalformed},
		{"t overflows int64", fmt.Sprintf("t=99999999999999999999,v1=%s", sig), body, now, DefaultTolerance, ErrMalformed},
		{"t far future, right HMAC", sign(secret, 9_000_000_000_000_000_000, body), body, now, DefaultTolerance, ErrStale},
		{"v1 short", fmt.Sprintf("t=%d,v1=%s", at, sig[:62]), body, now, DefaultTolerance, ErrMalformed},
		{"v1 long", fmt.Sprintf("t=%d,v1=%s00", at, sig), body, now, DefaultTolerance, ErrMalformed},
		{"v1 empty", fmt.Sprintf("t=%d,v1=", at), body, now, DefaultTolerance, ErrMalformed},
		{"bad v1 beside a good one", fmt.Sprintf("t=%d,v1=xyz,v1=%s", at, sig), body, now, DefaultTolerance, nil},
		{"key with spaces inside is not t", fmt.Sprintf("t =%d,v1=%s", at, sig), body, now, DefaultTolerance, ErrMalformed},
		{"empty body signed", sign(secret, at, ""), "", now, DefaultTolerance, nil},
		{"empty body, wrong", sign(secret, at, ""), " ", now, DefaultTolerance, ErrMismatch},
		{"forged and stale reports the mismatch", good, body + "x", now.Add(time.Hour), DefaultTolerance, ErrMismatch},
	}
	for _, c := range cases {
		err := Verify([]byte(secret), c.header, []byte(c.body), c.tolerance, c.now)
		if c.want == nil && err != nil {
			t.Errorf("%s: want nil, got %v", c.name, err)
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: want %v, got %v", c.name, c.want, err)
		}
	}
	// A wrong secret of the same header is a mismatch, never a pass.
	if err := Verify([]byte("other"), good, []byte(body), DefaultTolerance, now); !errors.Is(err, ErrMismatch) {
		t.Errorf("other secret: got %v", err)
	}
	// Each reason is distinct, so callers can tell them apart.
	for a, ea := range reasons {
		for b, eb := range reasons {
			if a != b && errors.Is(ea, eb) {
				t.Errorf("%s is %s", a, b)
			}
		}
	}
}
