// Package heraldwebhook verifies the X-Herald-Signature header that Herald's
// webhook channel sends when the channel has a secret:
//
//	X-Herald-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
//
// Verify recomputes the HMAC over the raw request body, compares it with
// every v1 entry in constant time, and refuses a t further than the
// tolerance from the receiver's clock, which refuses replays too.
//
// Standard library only.
package heraldwebhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// HeaderName is the header that carries the signature.
const HeaderName = "X-Herald-Signature"

// DefaultTolerance is the largest gap between t and the receiver's clock
// that Herald's docs ask receivers to accept: 5 minutes.
const DefaultTolerance = 5 * time.Minute

// The reasons Verify refuses a request. Match them with errors.Is.
var (
	// ErrMissing: the header is absent or empty.
	ErrMissing = errors.New("heraldwebhook: no signature header")
	// ErrMalformed: no t, t not a Unix time in seconds, t given twice,
	// or no v1 entry that is 64 hex digits.
	ErrMalformed = errors.New("heraldwebhook: malformed signature header")
	// ErrMismatch: no v1 entry is the HMAC of "<t>.<body>" under the secret.
	ErrMismatch = errors.New("heraldwebhook: signature does not match")
	// ErrStale: the signature is right but t is further than the tolerance
	// from now (an old request replayed, or a clock far off).
	ErrStale = errors.New("heraldwebhook: signature timestamp outside the tolerance")
)

// Verify checks header (the X-Herald-Signature value) against the raw body
// bytes, exactly as received, before any JSON decoding. It returns nil for
// an authentic request signed within tolerance of now, else an error that
// wraps one of ErrMissing, ErrMalformed, ErrMismatch or ErrStale.
//
// The timestamp counts as fresh when |now - t| <= tolerance, in whole
// seconds (DefaultTolerance is what Herald's docs ask for).
func Verify(secret []byte, header string, body []byte, tolerance time.Duration, now time.Time) error {
	header = strings.TrimSpace(header)
	if header == "" {
		return ErrMissing
	}
	ts, t, sigs, err := parse(header)
	if err != nil {
		return err
	}

	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	want := mac.Sum(nil)
	matched := false
	for _, sig := range sigs {
		// hmac.Equal compares in constant time; every entry is compared.
		if hmac.Equal(want, sig) {
			matched = true
		}
	}
	if !matched {
		return ErrMismatch
	}

	if absDiff(now.Unix(), t) > wholeSeconds(tolerance) {
		return ErrStale
	}
	return nil
}

// parse splits the header on ",", trims each entry, and reads "key=value"
// entries: exactly one t (decimal digits, as written, since the HMAC covers
// it as sent), and every v1 that is 64 hex digits. Other keys (and entries
// without "=") are ignored, so a later scheme can be added beside v1.
func parse(header string) (ts string, t int64, sigs [][]byte, err error) {
	seenT := false
	sawV1 := false
	for _, part := range strings.Split(header, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch key {
		case "t":
			if seenT {
				return "", 0, nil, errMalformed("t given twice")
			}
			seenT = true
			ts = value
		case "v1":
			sawV1 = true
			if len(value) != 2*sha256.Size {
				continue
			}
			sig, decodeErr := hex.DecodeString(value)
			if decodeErr != nil {
				continue
			}
			sigs = append(sigs, sig)
		}
	}
	if !seenT {
		return "", 0, nil, errMalformed("no t")
	}
	if !allDigits(ts) {
		return "", 0, nil, errMalformed("t is not a Unix time in seconds")
	}
	t, convErr := strconv.ParseInt(ts, 10, 64)
	if convErr != nil {
		return "", 0, nil, errMalformed("t is out of range")
	}
	if !sawV1 {
		return "", 0, nil, errMalformed("no v1")
	}
	if len(sigs) == 0 {
		return "", 0, nil, errMalformed("no v1 is 64 hex digits")
	}
	return ts, t, sigs, nil
}

type malformedError string

func (e malformedError) Error() string        { return ErrMalformed.Error() + ": " + string(e) }
func (e malformedError) Is(target error) bool { return target == ErrMalformed }

func errMalformed(why string) error { return malformedError(why) }

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// absDiff is |a - b| without overflow.
func absDiff(a, b int64) uint64 {
	if a >= b {
		return uint64(a) - uint64(b)
	}
	return uint64(b) - uint64(a)
}

// wholeSeconds is the tolerance in whole seconds, rounded down; one below a
// second (negative included) accepts only t equal to now's second.
func wholeSeconds(d time.Duration) uint64 {
	if d < 0 {
		return 0
	}
	return uint64(d / time.Second)
}
