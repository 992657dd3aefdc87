package bolt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, p := range []struct{ puid, name, sandbox string }{
		{"uid-a", "web-0", ""},
		{"0b1c2d3e-aaaa-4bbb-8ccc-1234567890ab", "web-7d4b9c8f5-x2k4q", "4f3e2d1c0b0a09080706050403020100ffeeddccbbaa99887766554433221100"},
		{"u", string(make([]byte, 300)), "sb"},
	} {
		want := pu(p.puid, p.name, p.sandbox)
		got, err := decodeRecord([]byte(want.PUID), encodeRecord(want))
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	assert.Len(t, encodeRecord(pu("x", "web-7d4b9c8f5-x2k4q", "4f3e2d1c0b0a09080706050403020100ffeeddccbbaa99887766554433221100")), 1+1+2+1+19+1+64)
}

func TestDecodeRecordRefusesDamage(t *testing.T) {
	good := encodeRecord(pu("uid-a", "web-0", "sb"))
	for name, tc := range map[string]struct{ key, rec []byte }{
		"empty key":            {nil, good},
		"empty record":         {[]byte("k"), nil},
		"unknown version":      {[]byte("k"), append([]byte{2}, good[1:]...)},
		"short":                {[]byte("k"), good[:len(good)-1]},
		"trailing bytes":       {[]byte("k"), append(append([]byte{}, good...), 0)},
		"huge length":          {[]byte("k"), []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		"bad varint":           {[]byte("k"), []byte{1, 0x80}},
		"no pod name":          {[]byte("k"), encodeRecord(pu("k", "", "sb"))},
		"no namespace":         {[]byte("k"), []byte{1, 0, 3, 'w', 'e', 'b', 0}},
		"lengths past the end": {[]byte("k"), []byte{1, 2, 'n', 's', 5, 'w'}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodeRecord(tc.key, tc.rec)
			require.ErrorIs(t, err, errBadRecord)
		})
	}
}

// Whatever a damaged file holds, decoding it errs or gives back a PU that
// encodes to the same bytes; it never panics.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte("uid-a"), encodeRecord(pu("uid-a", "web-0", "sb")))
	f.Add([]byte("k"), []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte(""), []byte{})
	f.Fuzz(func(t *testing.T, key, rec []byte) {
		p, err := decodeRecord(key, rec)
		if err != nil {
			return
		}
		assert.Equal(t, string(key), p.PUID)
		assert.Equal(t, rec, encodeRecord(p))
	})
}
