package heraldwebhook_test

import (
	"errors"
	"fmt"
	"time"

	"herald.invalid/heraldwebhook"
)

// In a receiver: header is r.Header.Get(heraldwebhook.HeaderName), body the
// raw bytes of r.Body before any JSON decoding, now time.Now(). Answer 401
// on an error.
func ExampleVerify() {
	secret := []byte("whsec")
	header := "t=1700000000,v1=e79220cb981f992adbc8b93ac6d46028b0217ea19327d27dc9d18bf334403bde"
	sent := time.Unix(1_700_000_000, 0)

	for _, c := range []struct {
		body string
		now  time.Time
	}{
		{`{"id":1}`, sent.Add(2 * time.Second)},
		{`{"id":2}`, sent.Add(2 * time.Second)},
		{`{"id":1}`, sent.Add(time.Hour)},
	} {
		err := heraldwebhook.Verify(secret, header, []byte(c.body), heraldwebhook.DefaultTolerance, c.now)
		switch {
		case err == nil:
			fmt.Println(c.body, "authentic")
		case errors.Is(err, heraldwebhook.ErrStale):
			fmt.Println(c.body, "authentic but too old: a replay, or a clock far off")
		default:
			fmt.Println(c.body, "refused:", err)
		}
	}
	// Output:
	// {"id":1} authentic
	// {"id":2} refused: heraldwebhook: signature does not match
	// {"id":1} authentic but too old: a replay, or a clock far off
}
