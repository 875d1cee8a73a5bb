package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

type entry struct {
	name string
	body []byte
	hdr  func(*tar.Header)
}

func build(t testing.TB, entries []entry, trailer []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o600, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		if e.hdr != nil {
			e.hdr(h)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Write(trailer)
	gz.Close()
	return buf.Bytes()
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func valid(state []byte) (meta, sums []byte) {
	meta, _ = json.Marshal(Meta{Product: product, Version: 1, ID: "x", Index: 5, Term: 1, Size: int64(len(state)), SnapshotVersion: raft.SnapshotVersionMax})
	sums = []byte(fmt.Sprintf("%s  %s\n%s  %s\n", sum(meta), metaFile, sum(state), stateFile))
	return meta, sums
}

// gnuSparse is a small archive made by GNU tar --sparse --format=pax whose
// state.bin is a 100 MiB hole: read naively, it writes 100 MiB to disk.
const gnuSparse = "H4sIAAAAAAAAA+2XS2+bQBRGWfMrrFlb43vnhbHkRaQoj0UrSzTZT+1ZEBmIgEgoUf97J7ZqG2TXbeWQOrlnA5oL4jGc+S58NLPNjbMLV1ajzNWWP1RFHpwU8BilVltPdwsoRYBaAkaoNJgAUCCqYNCc9jb281TVtvS30se1/kMkDLI6zdwUo1gbAwiCG/RToUBi6Kt2twqx5EYbpWM9Fq/V+eFz3/vJiD/hjZRvcdR/AV3/TQTBoBcnf/lfFkX9u+OO1bsPdya8sFlZLJ7mNZuweb18XNrcsSG793GQFjmb4JDdXvpa4wdv84Vr2EQP2TdXZqtakj47vwNqrCO/PPwg688Mvpv/XoXa8e9pz/kvQW38V5Fe57+k/O8DIQbXX+949WjLyvHMPhTlFMPOaJr7UQhFvDuaW5/8my8mlHK3WDq7rPzaMN0sDWG301j3EmLbS+zpNMSBTqNdfe93eM7wkZ+1ZDVpV+nScTQyVideCI74j6/7bf8Noqb87wMMt4YCmfTpaOV/cnMhtEnuviQnvcbf/P+v/UcDlP+98C+pfOj/n1L5/Hgj5Vsc8x+g67+Q2lD+90FDnhIEQRAEQRAEQRAEQXxofgK3BAuJACgAAA=="

func TestReadRefusesForgedArchives(t *testing.T) {
	sparse, err := base64.StdEncoding.DecodeString(gnuSparse)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 64<<20)
	zmeta, zsums := valid(zeros)
	state := []byte("the state")
	meta, sums := valid(state)
	bigMeta, _ := json.Marshal(Meta{Product: product, Version: 1, Size: MaxStateSize + 1})
	cases := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"valid", build(t, []entry{{metaFile, meta, nil}, {stateFile, state, nil}, {sumsFile, sums, nil}}, nil), ""},
		{"GNU tar sparse state", sparse, "state.bin is a sparse file"},
		{"gzip bomb: 64 MiB of zeros", build(t, []entry{{metaFile, zmeta, nil}, {stateFile, zeros, nil}, {sumsFile, zsums, nil}}, nil), "expands more than 256 times"},
		{"state as a symlink", build(t, []entry{{metaFile, meta, nil}, {stateFile, nil, func(h *tar.Header) {
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, "/etc/passwd", 0
		}}, {sumsFile, sums, nil}}, nil), "is not a regular file"},
		{"state twice", build(t, []entry{{metaFile, meta, nil}, {stateFile, state, nil}, {stateFile, state, nil}, {sumsFile, sums, nil}}, nil), "state.bin appears twice"},
		{"extra entry after the sums", build(t, []entry{{metaFile, meta, nil}, {stateFile, state, nil}, {sumsFile, sums, nil}, {"x", nil, nil}}, nil), `unexpected extra entry "x"`},
		{"state before meta", build(t, []entry{{stateFile, state, nil}, {metaFile, meta, nil}, {sumsFile, sums, nil}}, nil), "meta.json is missing"},
		{"declared size over the cap", build(t, []entry{{metaFile, bigMeta, nil}}, nil), "declares a state of"},
		{"state larger than declared", build(t, []entry{{metaFile, meta, nil}, {stateFile, append(state, '!'), nil}, {sumsFile, sums, nil}}, nil), "state is 10 bytes, metadata says 9"},
		{"gzip padding bomb", build(t, []entry{{metaFile, meta, nil}, {stateFile, state, nil}, {sumsFile, sums, nil}}, make([]byte, 2<<20)), "unexpected data after the archive's end"},
	}
	for _, tc := range cases {
		a, err := Read(bytes.NewReader(tc.archive))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
		if a != nil {
			a.Close()
		}
	}
}
